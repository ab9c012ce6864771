//! Encodings of raw samples inside the database: little-endian blobs for run indices, values and
//! kernel indices, compact per-series encodings of free-form columns, and JSON that keeps
//! non-finite numbers.

use kprof_core::{ExtraValue, KernelSample};
use serde_json::{json, Value};

use crate::error::{Result, StoreError};

/// Extra column of one series whose values are all the same: `json` holds the one value.
pub(crate) const EXTRA_CONSTANT: i64 = 0;
/// Extra column of one series holding numbers (and missing values): `numbers` is an f64 blob
/// with [`MISSING_BITS`] for missing values.
pub(crate) const EXTRA_NUMBERS: i64 = 1;
/// Any other extra column: `json` is an array of values.
pub(crate) const EXTRA_JSON: i64 = 2;

/// A NaN payload that no arithmetic produces, marking a missing value in a number blob (so
/// that a measured NaN and a missing cell stay distinct).
const MISSING_BITS: u64 = 0x7FF4_6B70_7266_0001;

pub(crate) fn u32s_to_blob(values: impl Iterator<Item = u32>, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len * 4);
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

pub(crate) fn f64s_to_blob(values: impl Iterator<Item = f64>, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len * 8);
    for v in values {
        out.extend_from_slice(&v.to_bits().to_le_bytes());
    }
    out
}

pub(crate) fn blob_to_u32s(blob: &[u8]) -> Result<Vec<u32>> {
    if blob.len() % 4 != 0 {
        return Err(damaged("an index blob's length is not a multiple of 4"));
    }
    Ok(blob
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

pub(crate) fn blob_to_f64s(blob: &[u8]) -> Result<Vec<f64>> {
    if blob.len() % 8 != 0 {
        return Err(damaged("a value blob's length is not a multiple of 8"));
    }
    Ok(blob
        .chunks_exact(8)
        .map(|c| f64::from_bits(u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))))
        .collect())
}

pub(crate) fn damaged(what: &str) -> StoreError {
    StoreError::Invalid(format!(
        "the results store holds a damaged run ({what}); it was not written by kprof or was changed by hand"
    ))
}

/// An f64 as JSON: a number when finite, else `"NaN"`, `"inf"`, `"-inf"` (as kprof's JSON files).
pub(crate) fn f64_json(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else if x.is_nan() {
        json!("NaN")
    } else if x > 0.0 {
        json!("inf")
    } else {
        json!("-inf")
    }
}

pub(crate) fn json_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) if s == "NaN" => Some(f64::NAN),
        Value::String(s) if s == "inf" => Some(f64::INFINITY),
        Value::String(s) if s == "-inf" => Some(f64::NEG_INFINITY),
        Value::Null => Some(f64::NAN),
        _ => None,
    }
}

fn extra_to_json(v: &ExtraValue) -> Value {
    match v {
        ExtraValue::Missing => Value::Null,
        ExtraValue::Number(x) if x.is_finite() => json!(x),
        ExtraValue::Number(x) => json!({ "number": f64_json(*x) }),
        ExtraValue::Text(s) => json!(s),
    }
}

fn json_to_extra(v: &Value) -> Result<ExtraValue> {
    Ok(match v {
        Value::Null => ExtraValue::Missing,
        Value::Number(n) => ExtraValue::Number(n.as_f64().ok_or_else(|| damaged("an extra value is not a number"))?),
        Value::String(s) => ExtraValue::Text(s.clone()),
        Value::Object(m) => ExtraValue::Number(
            m.get("number")
                .and_then(json_f64)
                .ok_or_else(|| damaged("an extra value is not a number"))?,
        ),
        _ => return Err(damaged("an extra value has an unknown type")),
    })
}

/// The stored form of one extra column of one series: (kind, numbers blob, JSON text).
pub(crate) type EncodedExtra = (i64, Option<Vec<u8>>, Option<String>);

/// Encodes one column's values for one series; `None` when every value is missing.
pub(crate) fn encode_extra(values: &[&ExtraValue]) -> Option<EncodedExtra> {
    if values.iter().all(|v| matches!(v, ExtraValue::Missing)) {
        return None;
    }
    if values.windows(2).all(|w| w[0] == w[1]) && !matches!(values[0], ExtraValue::Number(x) if x.is_nan()) {
        return Some((EXTRA_CONSTANT, None, Some(extra_to_json(values[0]).to_string())));
    }
    if values
        .iter()
        .all(|v| matches!(v, ExtraValue::Missing | ExtraValue::Number(_)))
    {
        let blob = f64s_to_blob(
            values.iter().map(|v| match v {
                ExtraValue::Number(x) => *x,
                _ => f64::from_bits(MISSING_BITS),
            }),
            values.len(),
        );
        return Some((EXTRA_NUMBERS, Some(blob), None));
    }
    let arr = Value::Array(values.iter().map(|v| extra_to_json(v)).collect());
    Some((EXTRA_JSON, None, Some(arr.to_string())))
}

/// Decodes one column of one series holding `n` samples.
pub(crate) fn decode_extra(kind: i64, numbers: Option<&[u8]>, text: Option<&str>, n: usize) -> Result<Vec<ExtraValue>> {
    let parse = |t: Option<&str>| -> Result<Value> {
        serde_json::from_str(t.ok_or_else(|| damaged("an extra column has no JSON"))?)
            .map_err(|_| damaged("an extra column's JSON does not parse"))
    };
    let out = match kind {
        EXTRA_CONSTANT => vec![json_to_extra(&parse(text)?)?; n],
        EXTRA_NUMBERS => blob_to_f64s(numbers.ok_or_else(|| damaged("an extra column has no numbers"))?)?
            .into_iter()
            .map(|x| {
                if x.to_bits() == MISSING_BITS {
                    ExtraValue::Missing
                } else {
                    ExtraValue::Number(x)
                }
            })
            .collect(),
        EXTRA_JSON => match parse(text)? {
            Value::Array(items) => items.iter().map(json_to_extra).collect::<Result<Vec<_>>>()?,
            _ => return Err(damaged("an extra column's JSON is not an array")),
        },
        _ => return Err(damaged("an extra column has an unknown kind")),
    };
    if out.len() != n {
        return Err(damaged("an extra column's length differs from its series'"));
    }
    Ok(out)
}

/// Per-kernel values as JSON rows `[series, run, position, kernel, value]`.
pub(crate) fn breakdown_to_json(rows: &[KernelSample]) -> String {
    Value::Array(
        rows.iter()
            .map(|k| json!([k.series, k.run, k.position, k.kernel, f64_json(k.value)]))
            .collect(),
    )
    .to_string()
}

pub(crate) fn json_to_breakdown(text: &str) -> Result<Vec<KernelSample>> {
    let bad = || damaged("the kernel breakdown does not parse");
    let v: Value = serde_json::from_str(text).map_err(|_| bad())?;
    let rows = v.as_array().ok_or_else(bad)?;
    rows.iter()
        .map(|r| {
            let a = r.as_array().filter(|a| a.len() == 5).ok_or_else(bad)?;
            let int = |i: usize| a[i].as_u64().and_then(|x| u32::try_from(x).ok()).ok_or_else(bad);
            Ok(KernelSample {
                series: int(0)?,
                run: int(1)?,
                position: int(2)?,
                kernel: a[3].as_str().ok_or_else(bad)?.to_string(),
                value: json_f64(&a[4]).ok_or_else(bad)?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extras_round_trip_in_every_encoding() {
        let cases: Vec<Vec<ExtraValue>> = vec![
            vec![ExtraValue::Text("580.159.04".into()); 3],
            vec![
                ExtraValue::Number(1.0),
                ExtraValue::Missing,
                ExtraValue::Number(f64::NAN),
            ],
            vec![
                ExtraValue::Text("0x0".into()),
                ExtraValue::Number(f64::INFINITY),
                ExtraValue::Missing,
            ],
            vec![ExtraValue::Number(f64::NAN); 2],
        ];
        for values in cases {
            let refs: Vec<&ExtraValue> = values.iter().collect();
            let (kind, blob, text) = encode_extra(&refs).unwrap();
            let back = decode_extra(kind, blob.as_deref(), text.as_deref(), values.len()).unwrap();
            assert_eq!(back.len(), values.len());
            for (a, b) in back.iter().zip(&values) {
                match (a, b) {
                    (ExtraValue::Number(x), ExtraValue::Number(y)) => assert_eq!(x.to_bits(), y.to_bits()),
                    _ => assert_eq!(a, b),
                }
            }
        }
        assert!(encode_extra(&[&ExtraValue::Missing]).is_none());
    }
}
