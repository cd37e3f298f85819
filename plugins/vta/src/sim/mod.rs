//! The VTA simulator: the load, compute and store modules executing their instruction queues
//! in order, synchronized by the four dependency-token queues, over the SRAMs of
//! [`machine::Machine`] and a DRAM image; with a cycle model and fsim's profiler counters.
//!
//! Routing (fetch): LOAD of inputs or weights → load; STORE → store; everything else (LOAD of
//! micro-ops or accumulators, GEMM, ALU, FINISH) → compute. Tokens: `l2c` (load → compute),
//! `c2l`, `c2s`, `s2c`; an instruction waits for every token it pops, runs, then pushes.
//!
//! Cycle model ([`cycles`]): each module is busy from an instruction's start to its end; an
//! instruction starts when its module is free and the tokens it pops have been pushed. The
//! simulator always runs next the instruction that can start earliest, so the functional
//! order is the order the hardware would follow, and a program whose tokens leave no module
//! able to proceed is reported as a deadlock naming the waiting instructions.

pub mod cycles;
pub mod machine;

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::config::VtaConfig;
use crate::isa::{Insn, Module};
use machine::{ExecFault, Machine};

/// Why a program could not run to its end.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SimError {
    /// An instruction faulted (out-of-buffer access, bad field).
    #[error("instruction {index} ({insn}): {fault}")]
    Fault {
        /// Position in the program.
        index: usize,
        /// The instruction as assembly.
        insn: String,
        /// What went wrong.
        fault: String,
    },
    /// No module can proceed.
    #[error("deadlock: no module can proceed ({waiting})")]
    Deadlock {
        /// Each waiting module's head instruction and the token it lacks.
        waiting: String,
    },
    /// The compute queue does not end with FINISH.
    #[error("the program has no FINISH at the end of the compute queue{0}")]
    Finish(String),
}

/// The four token queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Queue {
    L2c = 0,
    C2l = 1,
    C2s = 2,
    S2c = 3,
}

const QUEUE_NAMES: [&str; 4] = [
    "load->compute",
    "compute->load",
    "compute->store",
    "store->compute",
];

/// fsim's profiler counters and the cycle model's totals for one run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// Simulated cycles from the first instruction to the end of the last.
    pub cycles: u64,
    /// Cycles the GEMM core spends on multiply-accumulate micro-ops.
    pub gemm_busy_cycles: u64,
    /// Bytes of inputs loaded.
    pub inp_load_nbytes: u64,
    /// Bytes of weights loaded.
    pub wgt_load_nbytes: u64,
    /// Bytes of accumulators loaded.
    pub acc_load_nbytes: u64,
    /// Bytes of micro-ops loaded.
    pub uop_load_nbytes: u64,
    /// Bytes of outputs stored.
    pub out_store_nbytes: u64,
    /// Multiply-accumulate micro-op executions (each BLOCK x BLOCK MACs).
    pub gemm_counter: u64,
    /// ALU micro-op executions.
    pub alu_counter: u64,
}

impl Profile {
    /// GEMM busy cycles over all cycles (0 for an empty program).
    pub fn gemm_utilization(&self) -> f64 {
        if self.cycles == 0 {
            0.0
        } else {
            self.gemm_busy_cycles as f64 / self.cycles as f64
        }
    }

    /// Adds another run's counters (the cycles of programs run one after another add up).
    pub fn accumulate(&mut self, o: &Profile) {
        self.cycles += o.cycles;
        self.gemm_busy_cycles += o.gemm_busy_cycles;
        self.inp_load_nbytes += o.inp_load_nbytes;
        self.wgt_load_nbytes += o.wgt_load_nbytes;
        self.acc_load_nbytes += o.acc_load_nbytes;
        self.uop_load_nbytes += o.uop_load_nbytes;
        self.out_store_nbytes += o.out_store_nbytes;
        self.gemm_counter += o.gemm_counter;
        self.alu_counter += o.alu_counter;
    }

    /// The counters by their report names (`cycles`, `gemm_utilization`, then fsim's keys).
    pub fn counters(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("cycles", self.cycles as f64),
            ("gemm_utilization", self.gemm_utilization()),
            ("inp_load_nbytes", self.inp_load_nbytes as f64),
            ("wgt_load_nbytes", self.wgt_load_nbytes as f64),
            ("acc_load_nbytes", self.acc_load_nbytes as f64),
            ("uop_load_nbytes", self.uop_load_nbytes as f64),
            ("out_store_nbytes", self.out_store_nbytes as f64),
            ("gemm_counter", self.gemm_counter as f64),
            ("alu_counter", self.alu_counter as f64),
        ]
    }
}

/// A simulator instance for one configuration; its SRAM state persists between runs, as the
/// hardware's does.
#[derive(Clone, Debug)]
pub struct Simulator {
    config: VtaConfig,
    machine: Machine,
}

/// The tokens an instruction pops and pushes, by queue; an error for a flag the module does
/// not have.
fn token_queues(m: Module, insn: &Insn) -> Result<(Vec<Queue>, Vec<Queue>), String> {
    let d = insn.deps();
    let (pop_prev, pop_next, push_prev, push_next) = match m {
        Module::Load => (None, Some(Queue::C2l), None, Some(Queue::L2c)),
        Module::Compute => (
            Some(Queue::L2c),
            Some(Queue::S2c),
            Some(Queue::C2l),
            Some(Queue::C2s),
        ),
        Module::Store => (Some(Queue::C2s), None, Some(Queue::S2c), None),
    };
    let pick = |on: bool, q: Option<Queue>, name: &str, out: &mut Vec<Queue>| match (on, q) {
        (false, _) => Ok(()),
        (true, Some(q)) => {
            out.push(q);
            Ok(())
        }
        (true, None) => Err(format!(
            "{name} is set but the {} module has no such neighbour",
            m.name()
        )),
    };
    let (mut pops, mut pushes) = (Vec::new(), Vec::new());
    pick(d.pop_prev, pop_prev, "pop_prev", &mut pops)?;
    pick(d.pop_next, pop_next, "pop_next", &mut pops)?;
    pick(d.push_prev, push_prev, "push_prev", &mut pushes)?;
    pick(d.push_next, push_next, "push_next", &mut pushes)?;
    Ok((pops, pushes))
}

impl Simulator {
    /// A simulator with zeroed SRAMs.
    pub fn new(config: &VtaConfig) -> Self {
        Simulator {
            config: config.clone(),
            machine: Machine::new(config),
        }
    }

    /// The on-chip state (for tests).
    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// Mutable on-chip state (for tests).
    pub fn machine_mut(&mut self) -> &mut Machine {
        &mut self.machine
    }

    /// Runs `program` over `dram` until every module has drained its queue; the compute queue
    /// must end with FINISH.
    pub fn run(&mut self, program: &[Insn], dram: &mut [u8]) -> Result<Profile, SimError> {
        let mut queues: [Vec<usize>; 3] = Default::default();
        for (i, insn) in program.iter().enumerate() {
            queues[insn.module() as usize].push(i);
        }
        let compute = &queues[Module::Compute as usize];
        match compute
            .iter()
            .position(|&i| matches!(program[i], Insn::Finish(_)))
        {
            None => return Err(SimError::Finish(String::new())),
            Some(p) if p + 1 != compute.len() => {
                return Err(SimError::Finish(format!(
                    " (instruction {} follows the FINISH at {})",
                    compute[p + 1],
                    compute[p]
                )))
            }
            Some(_) => {}
        }
        let mut tokens: [VecDeque<u64>; 4] = Default::default();
        let mut clock = [0u64; 3];
        let mut head = [0usize; 3];
        let mut profile = Profile::default();
        let modules = [Module::Load, Module::Compute, Module::Store];
        loop {
            let mut best: Option<(u64, usize)> = None;
            let mut waiting = Vec::new();
            let mut all_done = true;
            for (k, &m) in modules.iter().enumerate() {
                let Some(&index) = queues[k].get(head[k]) else {
                    continue;
                };
                all_done = false;
                let insn = &program[index];
                let (pops, _) =
                    token_queues(m, insn).map_err(|fault| fault_at(index, insn, fault))?;
                let mut start = clock[k];
                let mut ready = true;
                for q in &pops {
                    match tokens[*q as usize].front() {
                        Some(&t) => start = start.max(t),
                        None => {
                            ready = false;
                            waiting.push(format!(
                                "{} waits at instruction {index} ({insn}) for a {} token",
                                m.name(),
                                QUEUE_NAMES[*q as usize]
                            ));
                        }
                    }
                }
                if ready && best.is_none_or(|(s, _)| start < s) {
                    best = Some((start, k));
                }
            }
            if all_done {
                break;
            }
            let Some((start, k)) = best else {
                return Err(SimError::Deadlock {
                    waiting: waiting.join("; "),
                });
            };
            let index = queues[k][head[k]];
            let insn = &program[index];
            let (pops, pushes) =
                token_queues(modules[k], insn).map_err(|fault| fault_at(index, insn, fault))?;
            for q in pops {
                tokens[q as usize].pop_front();
            }
            let cost = self
                .execute(insn, dram, &mut profile)
                .map_err(|fault| fault_at(index, insn, fault.to_string()))?;
            let end = start + cost;
            clock[k] = end;
            for q in pushes {
                tokens[q as usize].push_back(end);
            }
            head[k] += 1;
        }
        profile.cycles = clock.into_iter().max().unwrap_or(0);
        Ok(profile)
    }

    /// Executes one instruction, updates the counters, and returns its cycles.
    fn execute(
        &mut self,
        insn: &Insn,
        dram: &mut [u8],
        profile: &mut Profile,
    ) -> Result<u64, ExecFault> {
        let c = &self.config;
        match insn {
            Insn::Load(m) => {
                let bytes = self.machine.load(m, dram, c.elem_bytes(m.mem_type()))?;
                use crate::isa::MemType;
                let counter = match m.mem_type() {
                    MemType::Inp => &mut profile.inp_load_nbytes,
                    MemType::Wgt => &mut profile.wgt_load_nbytes,
                    MemType::Uop => &mut profile.uop_load_nbytes,
                    MemType::Acc | MemType::Acc8 | MemType::Out => &mut profile.acc_load_nbytes,
                };
                *counter += match m.mem_type() {
                    // fsim counts ACC_8BIT loads in accumulator elements.
                    MemType::Acc8 => bytes * 4,
                    _ => bytes,
                };
                Ok(cycles::load(c, m))
            }
            Insn::Store(m) => {
                profile.out_store_nbytes += self.machine.store(m, dram)?;
                Ok(cycles::store(c, m))
            }
            Insn::Gemm(g) => {
                let n = self.machine.gemm(g)?;
                let stalls = cycles::repeated_dst(&g.nest, self.machine.uops());
                if !g.reset {
                    profile.gemm_counter += n;
                    profile.gemm_busy_cycles += n;
                }
                Ok(cycles::gemm(n, stalls))
            }
            Insn::Alu(a) => {
                let n = self.machine.alu(a)?;
                profile.alu_counter += n;
                Ok(cycles::alu(n))
            }
            Insn::Finish(_) => Ok(1),
        }
    }
}

fn fault_at(index: usize, insn: &Insn, fault: String) -> SimError {
    SimError::Fault {
        index,
        insn: insn.to_string(),
        fault,
    }
}
