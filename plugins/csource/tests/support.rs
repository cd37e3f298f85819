//! The support description is consistent with byoc-ir and byoc-patterns: every listed op is
//! registered and has the attributes it pins, the pattern table parses, and the plugin's
//! description accepts and rejects what the table says.

use anyhow::{anyhow, Result};
use byoc_ir::op::OpRegistry;
use byoc_patterns::PatternTable;
use byoc_plugin_csource::support::{pattern_table_text, PATTERNS, SUPPORTED_OPS, TARGET};
use byoc_plugin_csource::CSource;
use byoc_sdk::Plugin;

#[test]
fn listed_ops_exist_with_their_attributes() -> Result<()> {
    for s in SUPPORTED_OPS {
        let op = OpRegistry::lookup(s.op).ok_or_else(|| anyhow!("{} is not registered", s.op))?;
        for (name, _) in s.required_attrs {
            assert!(
                op.default_attr(name).is_some(),
                "{}: no attribute {name}",
                s.op
            );
        }
    }
    Ok(())
}

#[test]
fn pattern_table_parses_in_order() -> Result<()> {
    let table = PatternTable::parse(&pattern_table_text()).map_err(|e| anyhow!("{e}"))?;
    let names: Vec<&str> = table.entries().iter().map(|e| e.name.as_str()).collect();
    let want: Vec<&str> = PATTERNS.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, want);
    assert!(names.iter().all(|n| n.starts_with("csource.")));
    assert_eq!(
        pattern_table_text().lines().next(),
        Some(
            r#"csource.conv2d_bias_relu = nn.relu(nn.bias_add(nn.conv2d(*, const){data_layout="NCHW", kernel_layout="OIHW"}, const))"#
        )
    );
    Ok(())
}

#[test]
fn target_rules_pin_layouts_and_float32() {
    let t = CSource::new().describe().support();
    assert_eq!(t.name(), TARGET);
    assert_eq!(t.rules().len(), SUPPORTED_OPS.len());
    let conv = t.rules().iter().find(|r| r.op == "nn.conv2d");
    let conv = conv.map(|r| (r.attrs.len(), r.dtypes.clone()));
    assert_eq!(conv, Some((2, Some(vec![byoc_ir::DType::Float32]))));
    assert!(!t.lists_op("exp"));
}
