//! Tables: the states a table holds, read from its Arrow columns, and the
//! table returned with the result columns beside the input's.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Schema, SchemaRef};
use serde_json::{Map, Number, Value};
use toolnexus::classifier::Questions;

// SPEC §24's flat result columns: one builder for Python and the command line.
use toolnexus_table::{self as columns, Outcome};

/// Where a row's state comes from.
pub enum StateFrom {
    /// One column: its cell is the state (text as text, a struct as an object).
    Column(String),
    /// Several columns: `{"a": …, "b": …}`.
    Columns(Vec<String>),
}

/// Every row's state, in table order: the state, or why the row has none
/// (a null cell, a number JSON cannot hold). A column that is missing or of
/// a type no state can be made from fails the whole table, naming it.
pub fn states(
    schema: &Schema,
    batches: &[RecordBatch],
    from: &StateFrom,
) -> Result<Vec<Result<Value, String>>, String> {
    let names: Vec<&str> = match from {
        StateFrom::Column(c) => vec![c.as_str()],
        StateFrom::Columns(cs) => cs.iter().map(String::as_str).collect(),
    };
    if names.is_empty() {
        return Err("state_columns= names no column".into());
    }
    let mut index = Vec::with_capacity(names.len());
    for name in &names {
        let Ok(i) = schema.index_of(name) else {
            let have: Vec<String> = schema
                .fields()
                .iter()
                .map(|f| format!("{:?}", f.name()))
                .collect();
            return Err(format!(
                "no column {name:?} in the table (it has {})",
                have.join(", ")
            ));
        };
        check_type(name, schema.field(i).data_type())?;
        index.push(i);
    }
    let mut out = Vec::new();
    for batch in batches {
        for row in 0..batch.num_rows() {
            let state = match from {
                StateFrom::Column(name) => {
                    let column = batch.column(index[0]);
                    match column.is_null(row) {
                        true => Err(format!("column {name:?} is null in this row: no state")),
                        false => {
                            cell(column.as_ref(), row).map_err(|e| format!("column {name:?}: {e}"))
                        }
                    }
                }
                StateFrom::Columns(cs) => {
                    let mut m = Map::new();
                    let mut failed = None;
                    for (name, i) in cs.iter().zip(&index) {
                        match cell(batch.column(*i).as_ref(), row) {
                            Ok(v) => {
                                m.insert(name.clone(), v);
                            }
                            Err(e) => {
                                failed = Some(format!("column {name:?}: {e}"));
                                break;
                            }
                        }
                    }
                    match failed {
                        Some(e) => Err(e),
                        None => Ok(Value::Object(m)),
                    }
                }
            };
            out.push(state);
        }
    }
    Ok(out)
}

/// A column type a state can be read from, or an error naming the column.
fn check_type(name: &str, t: &DataType) -> Result<(), String> {
    let fine = match t {
        DataType::Null
        | DataType::Boolean
        | DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64
        | DataType::Float32
        | DataType::Float64
        | DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View => true,
        DataType::Struct(fields) => {
            for f in fields {
                check_type(&format!("{name}.{}", f.name()), f.data_type())?;
            }
            true
        }
        DataType::List(f) | DataType::LargeList(f) => {
            check_type(&format!("{name}[]"), f.data_type())?;
            true
        }
        DataType::Dictionary(_, values) => {
            check_type(name, values)?;
            true
        }
        _ => false,
    };
    match fine {
        true => Ok(()),
        false => Err(format!(
            "column {name:?} is of type {t}, which a state cannot be read from (want text, numbers, booleans, structs or lists)"
        )),
    }
}

/// One cell as JSON. Types were checked by [`check_type`].
fn cell(array: &dyn Array, row: usize) -> Result<Value, String> {
    if array.is_null(row) {
        return Ok(Value::Null);
    }
    let float = |x: f64| {
        Number::from_f64(x)
            .map(Value::Number)
            .ok_or_else(|| format!("{x} is not a number JSON can hold"))
    };
    Ok(match array.data_type() {
        DataType::Null => Value::Null,
        DataType::Boolean => Value::Bool(array.as_boolean().value(row)),
        DataType::Int8 => array.as_primitive::<Int8Type>().value(row).into(),
        DataType::Int16 => array.as_primitive::<Int16Type>().value(row).into(),
        DataType::Int32 => array.as_primitive::<Int32Type>().value(row).into(),
        DataType::Int64 => array.as_primitive::<Int64Type>().value(row).into(),
        DataType::UInt8 => array.as_primitive::<UInt8Type>().value(row).into(),
        DataType::UInt16 => array.as_primitive::<UInt16Type>().value(row).into(),
        DataType::UInt32 => array.as_primitive::<UInt32Type>().value(row).into(),
        DataType::UInt64 => array.as_primitive::<UInt64Type>().value(row).into(),
        DataType::Float32 => float(array.as_primitive::<Float32Type>().value(row) as f64)?,
        DataType::Float64 => float(array.as_primitive::<Float64Type>().value(row))?,
        DataType::Utf8 => Value::String(array.as_string::<i32>().value(row).to_string()),
        DataType::LargeUtf8 => Value::String(array.as_string::<i64>().value(row).to_string()),
        DataType::Utf8View => Value::String(array.as_string_view().value(row).to_string()),
        DataType::Struct(fields) => {
            let s = array.as_struct();
            let mut m = Map::new();
            for (f, column) in fields.iter().zip(s.columns()) {
                m.insert(f.name().clone(), cell(column.as_ref(), row)?);
            }
            Value::Object(m)
        }
        DataType::List(_) => list(array.as_list::<i32>().value(row).as_ref())?,
        DataType::LargeList(_) => list(array.as_list::<i64>().value(row).as_ref())?,
        DataType::Dictionary(_, _) => {
            let d = array.as_any_dictionary();
            let key = d.normalized_keys()[row];
            cell(d.values().as_ref(), key)?
        }
        other => return Err(format!("type {other} cannot be a state")),
    })
}

fn list(values: &dyn Array) -> Result<Value, String> {
    (0..values.len())
        .map(|i| cell(values, i))
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

/// The output's schema: the input's columns, then the result columns. A
/// result column whose name the input already has is refused by name.
pub fn out_schema(input: &Schema, questions: &Questions) -> Result<SchemaRef, String> {
    let extra = columns::fields(questions);
    for f in &extra {
        if input.index_of(f.name()).is_ok() {
            return Err(format!(
                "the table already has a column {:?}, which the results would add; rename it first",
                f.name()
            ));
        }
    }
    let mut all: Vec<arrow_schema::FieldRef> = input.fields().iter().cloned().collect();
    all.extend(extra.into_iter().map(Arc::new));
    Ok(Arc::new(Schema::new_with_metadata(
        all,
        input.metadata().clone(),
    )))
}

/// The input batches with their rows' result columns beside them.
pub fn with_results(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    questions: &Questions,
    outcomes: &[Outcome],
) -> Result<Vec<RecordBatch>, String> {
    let mut out = Vec::with_capacity(batches.len());
    let mut start = 0;
    for batch in batches {
        let rows = &outcomes[start..start + batch.num_rows()];
        start += batch.num_rows();
        let mut arrays = batch.columns().to_vec();
        arrays.extend(columns::columns(questions, rows));
        out.push(RecordBatch::try_new(schema.clone(), arrays).map_err(|e| e.to_string())?);
    }
    Ok(out)
}

/// One row's slot while a table runs: filled when its call ends.
pub type Slot = Option<Outcome>;
