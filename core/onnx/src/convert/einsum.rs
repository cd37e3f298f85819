//! `Einsum`: an equation over one or more operands, lowered to transposes, reshapes, sums and
//! batched matrix products (the way TVM's and onnxruntime's CPU lowering contract pairs).
//!
//! Operands are contracted left to right. Each pair is arranged as `[batch, left, contracted]`
//! and `[batch, contracted, right]` (the batch indices are those of both operands that are still
//! needed afterwards, the contracted ones those needed no more), multiplied with `MatMul`'s
//! lowering, and the result reshaped back to one axis per index. An index that only one operand
//! holds and nothing later needs is summed out first. `...` stands for the same broadcast dims in
//! every operand (right-aligned, as numpy aligns them). Refused, naming the equation: an index
//! repeated within one operand (diagonals and traces), dims of one index that differ, and an
//! output index that no operand holds.

use std::collections::BTreeMap;

use super::matmul::{matmul_values, reshape, transpose};
use super::one;
use crate::ctx::NodeCtx;
use crate::OnnxError;
use byoc_ir::{AttrValue, Attrs, ExprId};

type Out = Result<Vec<ExprId>, OnnxError>;

/// A value with one index letter per axis.
struct Term {
    value: ExprId,
    indices: Vec<char>,
}

/// `Einsum(equation)`.
pub(super) fn einsum(ctx: &mut NodeCtx<'_>) -> Out {
    let equation = ctx.str_or("equation", "")?;
    let inputs = ctx.present_inputs();
    if inputs.is_empty() {
        return Err(ctx.err("needs at least one input"));
    }
    let ranks = inputs
        .iter()
        .map(|&x| ctx.rank(x))
        .collect::<Result<Vec<_>, _>>()?;
    let (operands, output) =
        parse(&equation, &ranks).map_err(|e| ctx.err(format!("equation '{equation}': {e}")))?;
    let mut sizes = BTreeMap::new();
    let mut terms = Vec::with_capacity(inputs.len());
    for (k, (&value, indices)) in inputs.iter().zip(operands).enumerate() {
        let shape = ctx.shape(value)?;
        for (&c, &d) in indices.iter().zip(&shape) {
            if let Some(&prev) = sizes.get(&c) {
                if prev != d {
                    return Err(ctx.err(format!(
                        "equation '{equation}': index '{c}' is {prev} long in one operand and {d} in operand {k}"
                    )));
                }
            }
            sizes.insert(c, d);
        }
        terms.push(Term { value, indices });
    }
    let mut terms = terms.into_iter();
    let mut acc = terms.next().expect("at least one operand");
    let rest: Vec<Term> = terms.collect();
    for (i, next) in rest.iter().enumerate() {
        let later: Vec<char> = rest[i + 1..]
            .iter()
            .flat_map(|t| t.indices.iter().copied())
            .chain(output.iter().copied())
            .collect();
        let a = sum_unneeded(ctx, acc, &[&later, &next.indices])?;
        let b = sum_unneeded(
            ctx,
            Term {
                value: next.value,
                indices: next.indices.clone(),
            },
            &[&later, &a.indices],
        )?;
        acc = contract(ctx, a, b, &later, &sizes)?;
    }
    let acc = sum_unneeded(ctx, acc, &[&output])?;
    let perm: Vec<i64> = output
        .iter()
        .map(|c| acc.indices.iter().position(|x| x == c).map(|p| p as i64))
        .collect::<Option<_>>()
        .ok_or_else(|| ctx.err(format!("equation '{equation}': lost an output index")))?;
    if perm.iter().enumerate().all(|(i, &p)| i as i64 == p) {
        return one(acc.value);
    }
    one(transpose(ctx, acc.value, &perm)?)
}

/// `t` with every index that no list in `needed` holds summed out.
fn sum_unneeded(ctx: &mut NodeCtx<'_>, t: Term, needed: &[&[char]]) -> Result<Term, OnnxError> {
    let drop: Vec<i64> = t
        .indices
        .iter()
        .enumerate()
        .filter(|(_, c)| !needed.iter().any(|n| n.contains(c)))
        .map(|(i, _)| i as i64)
        .collect();
    if drop.is_empty() {
        return Ok(t);
    }
    let attrs = Attrs::new()
        .with("axis", AttrValue::ints(drop.clone()))
        .with("keepdims", false);
    let value = ctx.call("sum", &[t.value], attrs)?;
    let indices = t
        .indices
        .iter()
        .enumerate()
        .filter(|(i, _)| !drop.contains(&(*i as i64)))
        .map(|(_, &c)| c)
        .collect();
    Ok(Term { value, indices })
}

/// The product of `a` and `b` over their shared indices, keeping those in `later`.
fn contract(
    ctx: &mut NodeCtx<'_>,
    a: Term,
    b: Term,
    later: &[char],
    sizes: &BTreeMap<char, usize>,
) -> Result<Term, OnnxError> {
    let shared = |c: &char| b.indices.contains(c);
    let batch: Vec<char> = a
        .indices
        .iter()
        .copied()
        .filter(|c| shared(c) && later.contains(c))
        .collect();
    let summed: Vec<char> = a
        .indices
        .iter()
        .copied()
        .filter(|c| shared(c) && !later.contains(c))
        .collect();
    let left: Vec<char> = a.indices.iter().copied().filter(|c| !shared(c)).collect();
    let right: Vec<char> = b
        .indices
        .iter()
        .copied()
        .filter(|c| !a.indices.contains(c))
        .collect();
    let size = |cs: &[char]| cs.iter().map(|c| sizes[c]).product::<usize>();
    let (pb, pl, pk, pr) = (size(&batch), size(&left), size(&summed), size(&right));
    let av = arrange(ctx, &a, &[&batch, &left, &summed], &[pb, pl, pk])?;
    let bv = arrange(ctx, &b, &[&batch, &summed, &right], &[pb, pk, pr])?;
    let product = matmul_values(ctx, av, bv, Attrs::new())?;
    let indices: Vec<char> = [batch, left, right].concat();
    let dims: Vec<usize> = indices.iter().map(|c| sizes[c]).collect();
    let value = reshape(ctx, product, &dims)?;
    Ok(Term { value, indices })
}

/// `t` transposed to the index groups `groups` in order and reshaped to one axis per group.
fn arrange(
    ctx: &mut NodeCtx<'_>,
    t: &Term,
    groups: &[&[char]],
    dims: &[usize],
) -> Result<ExprId, OnnxError> {
    let order: Vec<i64> = groups
        .iter()
        .flat_map(|g| g.iter())
        .map(|c| t.indices.iter().position(|x| x == c).unwrap_or(0) as i64)
        .collect();
    let mut v = t.value;
    if order.iter().enumerate().any(|(i, &p)| i as i64 != p) {
        v = transpose(ctx, v, &order)?;
    }
    reshape(ctx, v, dims)
}

/// The index letters of each operand and of the output, `...` expanded for the given ranks.
fn parse(equation: &str, ranks: &[usize]) -> Result<(Vec<Vec<char>>, Vec<char>), String> {
    let equation: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match equation.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (equation.as_str(), None),
    };
    let specs: Vec<&str> = lhs.split(',').collect();
    if specs.len() != ranks.len() {
        return Err(format!(
            "{} operand terms for {} inputs",
            specs.len(),
            ranks.len()
        ));
    }
    // The ellipsis dims, right-aligned: the widest operand's count, named by letters no term uses.
    let mut widest = 0;
    let mut operands = Vec::with_capacity(specs.len());
    let free: Vec<char> = ('A'..='Z')
        .chain('a'..='z')
        .filter(|c| !equation.contains(*c))
        .collect();
    for (k, (spec, &rank)) in specs.iter().zip(ranks).enumerate() {
        let (head, tail, ellipsis) =
            split_ellipsis(spec).map_err(|e| format!("operand {k}: {e}"))?;
        let named = head.len() + tail.len();
        let broadcast = if ellipsis {
            rank.checked_sub(named).ok_or_else(|| {
                format!("operand {k} has rank {rank} but its term names {named} indices")
            })?
        } else if named != rank {
            return Err(format!(
                "operand {k} has rank {rank} but its term '{spec}' names {named} indices"
            ));
        } else {
            0
        };
        if broadcast > free.len() {
            return Err(format!("operand {k}: too many '...' dims ({broadcast})"));
        }
        widest = widest.max(broadcast);
        operands.push((head, broadcast, tail));
    }
    let ellipsis_letters = |n: usize| free[free.len() - n..].to_vec();
    let mut terms = Vec::with_capacity(operands.len());
    for (k, (head, broadcast, tail)) in operands.into_iter().enumerate() {
        let mut indices = head;
        indices.extend(ellipsis_letters(broadcast));
        indices.extend(tail);
        for (i, c) in indices.iter().enumerate() {
            if indices[..i].contains(c) {
                return Err(format!(
                    "index '{c}' repeats in operand {k} (diagonals and traces are not supported)"
                ));
            }
        }
        terms.push(indices);
    }
    let output = match rhs {
        Some(r) => {
            let (head, tail, ellipsis) = split_ellipsis(r).map_err(|e| format!("output: {e}"))?;
            let mut out = head;
            if ellipsis {
                out.extend(ellipsis_letters(widest));
            }
            out.extend(tail);
            for (i, c) in out.iter().enumerate() {
                if out[..i].contains(c) {
                    return Err(format!("index '{c}' repeats in the output"));
                }
                if !terms.iter().any(|t| t.contains(c)) {
                    return Err(format!("output index '{c}' is in no operand"));
                }
            }
            out
        }
        None => {
            // numpy's implicit output: the '...' dims, then every index used once, sorted.
            let mut counts = BTreeMap::new();
            for c in terms.iter().flatten() {
                *counts.entry(*c).or_insert(0) += 1;
            }
            let dots = ellipsis_letters(widest);
            let mut out = dots.clone();
            out.extend(
                counts
                    .into_iter()
                    .filter(|&(c, n)| n == 1 && !dots.contains(&c))
                    .map(|(c, _)| c),
            );
            out
        }
    };
    Ok((terms, output))
}

/// A term's letters before and after its `...`, and whether it has one.
fn split_ellipsis(term: &str) -> Result<(Vec<char>, Vec<char>, bool), String> {
    let letters = |s: &str| -> Result<Vec<char>, String> {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphabetic() {
                    Ok(c)
                } else {
                    Err(format!("'{c}' is not an index letter"))
                }
            })
            .collect()
    };
    match term.split_once("...") {
        Some((head, tail)) => {
            if tail.contains("...") {
                return Err("more than one '...'".into());
            }
            Ok((letters(head)?, letters(tail)?, true))
        }
        None => Ok((letters(term)?, vec![], false)),
    }
}
