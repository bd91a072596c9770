//! One cell of an Arrow column as JSON: how a table's values become states
//! and ids.

use arrow_array::cast::AsArray as _;
use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrowPrimitiveType};
use arrow_schema::DataType;
use serde_json::{Map, Value};

/// The JSON of row `i` of `array`: null, a boolean, a number, a string, an
/// object (a struct column), an array (a list column); any other type (a
/// date, a decimal) as the text Arrow displays it with.
///
/// ```
/// use arrow_array::{Int64Array, StringArray};
/// use toolnexus_table::cell;
/// assert_eq!(cell(&StringArray::from(vec!["a"]), 0), serde_json::json!("a"));
/// assert_eq!(cell(&Int64Array::from(vec![None, Some(7)]), 1), serde_json::json!(7));
/// ```
pub fn cell(array: &dyn Array, i: usize) -> Value {
    if array.is_null(i) {
        return Value::Null;
    }
    fn num<T: ArrowPrimitiveType>(a: &dyn Array, i: usize) -> Value
    where
        T::Native: Into<Value>,
    {
        a.as_primitive::<T>().value(i).into()
    }
    let float = |f: f64| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number);
    match array.data_type() {
        DataType::Boolean => array.as_boolean().value(i).into(),
        DataType::Int8 => num::<Int8Type>(array, i),
        DataType::Int16 => num::<Int16Type>(array, i),
        DataType::Int32 => num::<Int32Type>(array, i),
        DataType::Int64 => num::<Int64Type>(array, i),
        DataType::UInt8 => num::<UInt8Type>(array, i),
        DataType::UInt16 => num::<UInt16Type>(array, i),
        DataType::UInt32 => num::<UInt32Type>(array, i),
        DataType::UInt64 => num::<UInt64Type>(array, i),
        DataType::Float32 => float(f64::from(array.as_primitive::<Float32Type>().value(i))),
        DataType::Float64 => float(array.as_primitive::<Float64Type>().value(i)),
        DataType::Utf8 => array.as_string::<i32>().value(i).into(),
        DataType::LargeUtf8 => array.as_string::<i64>().value(i).into(),
        DataType::Utf8View => array.as_string_view().value(i).into(),
        DataType::Struct(fields) => {
            let s = array.as_struct();
            let mut o = Map::new();
            for (f, column) in fields.iter().zip(s.columns()) {
                o.insert(f.name().clone(), cell(column.as_ref(), i));
            }
            Value::Object(o)
        }
        DataType::List(_) => list(&array.as_list::<i32>().value(i)),
        DataType::LargeList(_) => list(&array.as_list::<i64>().value(i)),
        // One cell cast to the dictionary's value type: no key vector per cell.
        DataType::Dictionary(_, values) => match arrow_cast::cast(&array.slice(i, 1), values) {
            Ok(one) => cell(one.as_ref(), 0),
            Err(_) => Value::Null,
        },
        _ => {
            let options = arrow_cast::display::FormatOptions::default();
            match arrow_cast::display::ArrayFormatter::try_new(array, &options) {
                Ok(f) => f.value(i).to_string().into(),
                Err(_) => Value::Null,
            }
        }
    }
}

fn list(values: &dyn Array) -> Value {
    Value::Array((0..values.len()).map(|j| cell(values, j)).collect())
}

/// A state from one column's cell: a string that holds a JSON object is that
/// object (a CSV column of JSON states); any other string is the text.
///
/// ```
/// use serde_json::json;
/// use toolnexus_table::state_of;
/// assert_eq!(state_of(json!("{\"cmd\": \"ls\"}")), json!({"cmd": "ls"}));
/// assert_eq!(state_of(json!("{ echo hi; }")), json!("{ echo hi; }"));
/// ```
pub fn state_of(v: Value) -> Value {
    if let Value::String(s) = &v
        && s.trim_start().starts_with('{')
        && let Ok(o @ Value::Object(_)) = serde_json::from_str::<Value>(s)
    {
        return o;
    }
    v
}
