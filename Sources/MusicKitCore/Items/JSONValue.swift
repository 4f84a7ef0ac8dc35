import Foundation

/// A JSON value as found in Apple Music API documents, kept as it came so that attributes
/// this framework does not model survive a decode and encode.
package enum JSONValue: Codable, Hashable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else if let value = try? container.decode([String: JSONValue].self) {
            self = .object(value)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a JSON value")
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            // JSON has no NaN or infinity: such a number is written as null, so that what is
            // written always parses (a reply, the state file).
            if !value.isFinite { try container.encodeNil(); return }
            if value.rounded() == value && abs(value) < 9e15 { try container.encode(Int64(value)) } else { try container.encode(value) }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    package var string: String? { if case .string(let value) = self { value } else { nil } }
    package var number: Double? { if case .number(let value) = self { value } else { nil } }
    package var int: Int? { number.flatMap { $0.isFinite ? Int(exactly: $0.rounded()) : nil } }
    package var bool: Bool? { if case .bool(let value) = self { value } else { nil } }
    package var array: [JSONValue]? { if case .array(let value) = self { value } else { nil } }
    package var object: [String: JSONValue]? { if case .object(let value) = self { value } else { nil } }

    package subscript(key: String) -> JSONValue? { object?[key] }

    /// Compact JSON text (keys sorted, so equal values give equal text).
    package var serialized: String {
        var output = ""
        write(into: &output)
        return output
    }

    private func write(into output: inout String) {
        switch self {
        case .null: output += "null"
        case .bool(let value): output += value ? "true" : "false"
        case .number(let value):
            // JSON has no NaN or infinity: such a number is written as null, so that what is
            // written always parses (a reply, the state file).
            if !value.isFinite { output += "null"; return }
            if value.rounded() == value && abs(value) < 9e15 { output += String(Int64(value)) } else { output += "\(value)" }
        case .string(let value): JSONValue.writeString(value, into: &output)
        case .array(let values):
            output += "["
            for (index, value) in values.enumerated() {
                if index > 0 { output += "," }
                value.write(into: &output)
            }
            output += "]"
        case .object(let values):
            output += "{"
            for (index, key) in values.keys.sorted().enumerated() {
                if index > 0 { output += "," }
                JSONValue.writeString(key, into: &output)
                output += ":"
                values[key]!.write(into: &output)
            }
            output += "}"
        }
    }

    private static func writeString(_ value: String, into output: inout String) {
        output += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            default:
                if scalar.value < 0x20 {
                    output += String(format: "\\u%04x", scalar.value)
                } else {
                    output.unicodeScalars.append(scalar)
                }
            }
        }
        output += "\""
    }
}

/// Where in a JSON document something is, as `data[3].attributes.name`.
func jsonPath(_ codingPath: [any CodingKey]) -> String {
    var path = ""
    for key in codingPath {
        if let index = key.intValue {
            path += "[\(index)]"
        } else {
            path += path.isEmpty ? key.stringValue : ".\(key.stringValue)"
        }
    }
    return path.isEmpty ? "(top level)" : path
}

// Literals, for building messages (the system player's wire): `["op": "next", "args": [:]]`.
extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    package init(stringLiteral value: String) { self = .string(value) }
    package init(integerLiteral value: Int) { self = .number(Double(value)) }
    package init(floatLiteral value: Double) { self = .number(value) }
    package init(booleanLiteral value: Bool) { self = .bool(value) }
    package init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    package init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    package init(_ value: Int) { self = .number(Double(value)) }
}
