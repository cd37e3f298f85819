//! The subset of `onnx.proto` (ONNX IR version 3 to 10) the importer reads, as `prost` messages.
//!
//! The structs are written by hand with `prost`'s derive, so building byoc needs neither
//! `protoc` nor a build script. Field numbers and wire types follow `onnx/onnx.proto`; fields the
//! importer does not use (doc strings, training info, sparse tensors, lists of subgraphs,
//! functions) are left out and skipped by the decoder like any unknown field. A subgraph
//! attribute (`If`'s branches) is read; prost's recursion limit bounds how deep they nest.

// The derive generates accessors and `Default`s that not every field needs.
#![allow(
    clippy::derive_partial_eq_without_eq,
    reason = "prost derives PartialEq only"
)]

/// A model: IR version, opsets and the main graph.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelProto {
    /// The ONNX IR version the model was written with.
    #[prost(int64, tag = "1")]
    pub ir_version: i64,
    /// The operator sets the model imports.
    #[prost(message, repeated, tag = "8")]
    pub opset_import: Vec<OperatorSetIdProto>,
    /// The tool that wrote the model.
    #[prost(string, tag = "2")]
    pub producer_name: String,
    /// The graph.
    #[prost(message, optional, tag = "7")]
    pub graph: Option<GraphProto>,
}

/// An operator set a model imports: a domain and a version.
#[derive(Clone, PartialEq, prost::Message)]
pub struct OperatorSetIdProto {
    /// The domain; empty or `ai.onnx` is the default ONNX domain.
    #[prost(string, tag = "1")]
    pub domain: String,
    /// The opset version.
    #[prost(int64, tag = "2")]
    pub version: i64,
}

/// A graph: nodes in (supposedly) topological order, initializers, inputs and outputs.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GraphProto {
    /// The nodes.
    #[prost(message, repeated, tag = "1")]
    pub node: Vec<NodeProto>,
    /// The graph's name.
    #[prost(string, tag = "2")]
    pub name: String,
    /// Named constant tensors (weights).
    #[prost(message, repeated, tag = "5")]
    pub initializer: Vec<TensorProto>,
    /// Graph inputs (may include initializers, for IR version < 4).
    #[prost(message, repeated, tag = "11")]
    pub input: Vec<ValueInfoProto>,
    /// Graph outputs.
    #[prost(message, repeated, tag = "12")]
    pub output: Vec<ValueInfoProto>,
    /// Types of intermediate values (informative only).
    #[prost(message, repeated, tag = "13")]
    pub value_info: Vec<ValueInfoProto>,
}

/// One operator application.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeProto {
    /// Input value names; an empty name is an omitted optional input.
    #[prost(string, repeated, tag = "1")]
    pub input: Vec<String>,
    /// Output value names; an empty name is an unused optional output.
    #[prost(string, repeated, tag = "2")]
    pub output: Vec<String>,
    /// The node's name (may be empty).
    #[prost(string, tag = "3")]
    pub name: String,
    /// The operator.
    #[prost(string, tag = "4")]
    pub op_type: String,
    /// The operator's domain; empty is the default ONNX domain.
    #[prost(string, tag = "7")]
    pub domain: String,
    /// Attributes.
    #[prost(message, repeated, tag = "5")]
    pub attribute: Vec<AttributeProto>,
}

/// A node attribute. `r#type` says which of the value fields holds the value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AttributeProto {
    /// The attribute's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The value kind ([`attribute_type`]).
    #[prost(int32, tag = "20")]
    pub r#type: i32,
    /// A float value.
    #[prost(float, tag = "2")]
    pub f: f32,
    /// An integer value.
    #[prost(int64, tag = "3")]
    pub i: i64,
    /// A string value (bytes, UTF-8 by convention).
    #[prost(bytes = "vec", tag = "4")]
    pub s: Vec<u8>,
    /// A tensor value.
    #[prost(message, optional, tag = "5")]
    pub t: Option<TensorProto>,
    /// A graph value (a subgraph, such as `If`'s branches).
    #[prost(message, optional, boxed, tag = "6")]
    pub g: Option<Box<GraphProto>>,
    /// A list of floats.
    #[prost(float, repeated, tag = "7")]
    pub floats: Vec<f32>,
    /// A list of integers.
    #[prost(int64, repeated, tag = "8")]
    pub ints: Vec<i64>,
    /// A list of strings.
    #[prost(bytes = "vec", repeated, tag = "9")]
    pub strings: Vec<Vec<u8>>,
}

/// Values of [`AttributeProto::type`].
pub mod attribute_type {
    /// A float.
    pub const FLOAT: i32 = 1;
    /// An integer.
    pub const INT: i32 = 2;
    /// A string.
    pub const STRING: i32 = 3;
    /// A tensor.
    pub const TENSOR: i32 = 4;
    /// A subgraph.
    pub const GRAPH: i32 = 5;
    /// A list of floats.
    pub const FLOATS: i32 = 6;
    /// A list of integers.
    pub const INTS: i32 = 7;
    /// A list of strings.
    pub const STRINGS: i32 = 8;

    /// The ONNX name of an attribute type code.
    pub fn name(code: i32) -> &'static str {
        match code {
            FLOAT => "FLOAT",
            INT => "INT",
            STRING => "STRING",
            TENSOR => "TENSOR",
            GRAPH => "GRAPH",
            FLOATS => "FLOATS",
            INTS => "INTS",
            STRINGS => "STRINGS",
            9 => "TENSORS",
            10 => "GRAPHS",
            11 => "SPARSE_TENSOR",
            12 => "SPARSE_TENSORS",
            13 => "TYPE_PROTO",
            14 => "TYPE_PROTOS",
            _ => "UNDEFINED",
        }
    }
}

/// The name and type of a graph input, output or intermediate value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueInfoProto {
    /// The value's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its type.
    #[prost(message, optional, tag = "2")]
    pub r#type: Option<TypeProto>,
}

/// A value type; only tensor types are read.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeProto {
    /// The tensor type, when the value is a tensor.
    #[prost(message, optional, tag = "1")]
    pub tensor_type: Option<TypeProtoTensor>,
}

/// `TypeProto.Tensor`: element type and (possibly symbolic) shape.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeProtoTensor {
    /// The element type ([`data_type`]).
    #[prost(int32, tag = "1")]
    pub elem_type: i32,
    /// The shape; absent means unknown rank.
    #[prost(message, optional, tag = "2")]
    pub shape: Option<TensorShapeProto>,
}

/// A tensor shape.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorShapeProto {
    /// The dimensions.
    #[prost(message, repeated, tag = "1")]
    pub dim: Vec<Dimension>,
}

/// One dimension: a number, a symbol, or unknown when neither is set.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Dimension {
    /// A fixed size.
    #[prost(int64, optional, tag = "1")]
    pub dim_value: Option<i64>,
    /// A symbolic size (`batch`, `N`).
    #[prost(string, optional, tag = "2")]
    pub dim_param: Option<String>,
}

/// A tensor: dims, element type, and the data in one of the typed fields, `raw_data`, or an
/// external file.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorProto {
    /// The shape.
    #[prost(int64, repeated, tag = "1")]
    pub dims: Vec<i64>,
    /// The element type ([`data_type`]).
    #[prost(int32, tag = "2")]
    pub data_type: i32,
    /// FLOAT and COMPLEX64 data.
    #[prost(float, repeated, tag = "4")]
    pub float_data: Vec<f32>,
    /// INT32, INT16, INT8, UINT16, UINT8, BOOL, FLOAT16 and BFLOAT16 data (the 16-bit floats
    /// as their bit patterns).
    #[prost(int32, repeated, tag = "5")]
    pub int32_data: Vec<i32>,
    /// STRING data.
    #[prost(bytes = "vec", repeated, tag = "6")]
    pub string_data: Vec<Vec<u8>>,
    /// INT64 data.
    #[prost(int64, repeated, tag = "7")]
    pub int64_data: Vec<i64>,
    /// The tensor's name (initializers are referred to by it).
    #[prost(string, tag = "8")]
    pub name: String,
    /// The data as little-endian bytes.
    #[prost(bytes = "vec", tag = "9")]
    pub raw_data: Vec<u8>,
    /// DOUBLE and COMPLEX128 data.
    #[prost(double, repeated, tag = "10")]
    pub double_data: Vec<f64>,
    /// UINT32 and UINT64 data.
    #[prost(uint64, repeated, tag = "11")]
    pub uint64_data: Vec<u64>,
    /// Where external data lives: `location`, `offset`, `length`.
    #[prost(message, repeated, tag = "13")]
    pub external_data: Vec<StringStringEntryProto>,
    /// 1 when the data is in an external file.
    #[prost(int32, tag = "14")]
    pub data_location: i32,
}

/// A key/value pair.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StringStringEntryProto {
    /// The key.
    #[prost(string, tag = "1")]
    pub key: String,
    /// The value.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// Values of `TensorProto.DataType`.
pub mod data_type {
    /// float32.
    pub const FLOAT: i32 = 1;
    /// uint8.
    pub const UINT8: i32 = 2;
    /// int8.
    pub const INT8: i32 = 3;
    /// uint16.
    pub const UINT16: i32 = 4;
    /// int16.
    pub const INT16: i32 = 5;
    /// int32.
    pub const INT32: i32 = 6;
    /// int64.
    pub const INT64: i32 = 7;
    /// string.
    pub const STRING: i32 = 8;
    /// bool.
    pub const BOOL: i32 = 9;
    /// float16.
    pub const FLOAT16: i32 = 10;
    /// float64.
    pub const DOUBLE: i32 = 11;
    /// uint32.
    pub const UINT32: i32 = 12;
    /// uint64.
    pub const UINT64: i32 = 13;
    /// bfloat16.
    pub const BFLOAT16: i32 = 16;

    /// The ONNX name of a data type code.
    pub fn name(code: i32) -> String {
        let s = match code {
            FLOAT => "FLOAT",
            UINT8 => "UINT8",
            INT8 => "INT8",
            UINT16 => "UINT16",
            INT16 => "INT16",
            INT32 => "INT32",
            INT64 => "INT64",
            STRING => "STRING",
            BOOL => "BOOL",
            FLOAT16 => "FLOAT16",
            DOUBLE => "DOUBLE",
            UINT32 => "UINT32",
            UINT64 => "UINT64",
            14 => "COMPLEX64",
            15 => "COMPLEX128",
            BFLOAT16 => "BFLOAT16",
            _ => return format!("data type {code}"),
        };
        s.to_string()
    }
}
