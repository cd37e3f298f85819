//! Reading a kernel node's attributes (TVM's string lists: `"strides": [["1", "1"]]`,
//! booleans `"1"`/`"0"`, floats `%.17g`) with errors that name the attribute.

use byoc_json_runtime::NodeAttrs;

use super::OpError;

/// Typed access to one node's attributes.
pub(crate) struct Attrs<'a>(pub &'a NodeAttrs);

impl Attrs<'_> {
    fn values(&self, name: &str) -> Option<&[String]> {
        self.0.get(name)
    }

    /// An integer list; `default` when absent.
    pub fn ints_or(&self, name: &str, default: &[i64]) -> Result<Vec<i64>, OpError> {
        match self.values(name) {
            None => Ok(default.to_vec()),
            Some(vs) => vs
                .iter()
                .map(|v| {
                    v.trim().parse::<i64>().map_err(|_| {
                        OpError::msg(format!("attribute {name}: '{v}' is not an integer"))
                    })
                })
                .collect(),
        }
    }

    /// One integer; `default` when absent or unset (`""`).
    pub fn int_or(&self, name: &str, default: i64) -> Result<i64, OpError> {
        match self.values(name) {
            None => Ok(default),
            Some([v]) if v.is_empty() => Ok(default),
            Some([v]) => v
                .trim()
                .parse()
                .map_err(|_| OpError::msg(format!("attribute {name}: '{v}' is not an integer"))),
            Some(vs) => Err(OpError::msg(format!(
                "attribute {name}: expected one value, got {vs:?}"
            ))),
        }
    }

    /// One float; `default` when absent.
    pub fn float_or(&self, name: &str, default: f64) -> Result<f64, OpError> {
        match self.values(name) {
            None => Ok(default),
            Some([v]) => v
                .trim()
                .parse()
                .map_err(|_| OpError::msg(format!("attribute {name}: '{v}' is not a number"))),
            Some(vs) => Err(OpError::msg(format!(
                "attribute {name}: expected one value, got {vs:?}"
            ))),
        }
    }

    /// One float that must be present.
    pub fn float(&self, name: &str) -> Result<f64, OpError> {
        if self.values(name).is_none() {
            return Err(OpError::msg(format!("attribute {name} is missing")));
        }
        self.float_or(name, 0.0)
    }

    /// A boolean (`"1"`/`"0"`, `true`/`false`); `default` when absent.
    pub fn flag_or(&self, name: &str, default: bool) -> Result<bool, OpError> {
        match self.values(name) {
            None => Ok(default),
            Some([v]) => match v.trim() {
                "1" | "true" | "True" => Ok(true),
                "0" | "false" | "False" => Ok(false),
                other => Err(OpError::msg(format!(
                    "attribute {name}: '{other}' is not a boolean"
                ))),
            },
            Some(vs) => Err(OpError::msg(format!(
                "attribute {name}: expected one value, got {vs:?}"
            ))),
        }
    }

    /// A string; `default` when absent or empty.
    pub fn str_or<'s>(&'s self, name: &str, default: &'s str) -> &'s str {
        match self.values(name) {
            Some([v]) if !v.is_empty() => v,
            _ => default,
        }
    }

    /// Requires the layout attribute `name` to be one of `accepted` (empty counts as the
    /// first).
    pub fn layout(&self, name: &str, accepted: &[&str]) -> Result<(), OpError> {
        let v = self.str_or(name, accepted[0]);
        if accepted.contains(&v) {
            Ok(())
        } else {
            Err(OpError::msg(format!(
                "{name} {v} is not supported (only {})",
                accepted.join(" or ")
            )))
        }
    }
}

/// A per-spatial-axis list from 1 or `n` values.
pub(crate) fn per_axis(name: &str, v: &[i64], n: usize) -> Result<Vec<i64>, OpError> {
    match v.len() {
        1 => Ok(vec![v[0]; n]),
        l if l == n => Ok(v.to_vec()),
        _ => Err(OpError::msg(format!(
            "attribute {name}: expected 1 or {n} values, got {v:?}"
        ))),
    }
}

/// Padding before each of `n` spatial axes from Relay's 1, `n` or `2n` values.
pub(crate) fn pad_before(v: &[i64], n: usize) -> Result<Vec<i64>, OpError> {
    match v.len() {
        1 => Ok(vec![v[0]; n]),
        l if l == n || l == 2 * n => Ok(v[..n].to_vec()),
        _ => Err(OpError::msg(format!(
            "attribute padding: expected 1, {n} or {} values, got {v:?}",
            2 * n
        ))),
    }
}
