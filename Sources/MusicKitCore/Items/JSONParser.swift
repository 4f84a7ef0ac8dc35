import Foundation

/// A JSON syntax error: where (line and column) and what.
package struct JSONSyntaxError: Error, CustomStringConvertible {
    package let line: Int
    package let column: Int
    package let message: String
    package var description: String { "line \(line), column \(column): \(message)" }
}

extension JSONValue {
    /// Parses JSON text straight into a `JSONValue`. Much faster than `JSONDecoder` for this
    /// (which has to try each type in turn); used for catalog documents and stored resources.
    package static func parse(_ data: Data) throws(JSONSyntaxError) -> JSONValue {
        var parser = JSONParser(bytes: [UInt8](data))
        parser.skipWhitespace()
        let value = try parser.value()
        parser.skipWhitespace()
        if parser.index != parser.bytes.count { throw parser.error("unexpected text after the end of the JSON value") }
        return value
    }

    static func parse(_ text: String) throws(JSONSyntaxError) -> JSONValue {
        try parse(Data(text.utf8))
    }
}

private struct JSONParser {
    let bytes: [UInt8]
    var index = 0
    var depth = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    func error(_ message: String) -> JSONSyntaxError {
        var line = 1
        var column = 1
        for byte in bytes[..<min(index, bytes.count)] {
            if byte == 0x0A { line += 1; column = 1 } else if byte & 0xC0 != 0x80 { column += 1 }
        }
        return JSONSyntaxError(line: line, column: column, message: message)
    }

    mutating func skipWhitespace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
            index += 1
        }
    }

    mutating func value() throws(JSONSyntaxError) -> JSONValue {
        guard index < bytes.count else { throw error("unexpected end of the document") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw error("unexpected character '\(Character(UnicodeScalar(bytes[index])))'")
        }
    }

    mutating func literal(_ word: StaticString, _ value: JSONValue) throws(JSONSyntaxError) -> JSONValue {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw error("unexpected end of the document") }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw error("expected \(word)")
        }
        index += count
        return value
    }

    mutating func object() throws(JSONSyntaxError) -> JSONValue {
        depth += 1
        if depth > 512 { throw error("nested too deeply") }
        defer { depth -= 1 }
        index += 1
        var result: [String: JSONValue] = [:]
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(result)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a key in quotes") }
            let key = try string()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':' after a key") }
            index += 1
            skipWhitespace()
            result[key] = try value()
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of the document in an object") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(result) }
            throw error("expected ',' or '}' in an object")
        }
    }

    mutating func array() throws(JSONSyntaxError) -> JSONValue {
        depth += 1
        if depth > 512 { throw error("nested too deeply") }
        defer { depth -= 1 }
        index += 1
        var result: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(result)
        }
        while true {
            skipWhitespace()
            result.append(try value())
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of the document in an array") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(result) }
            throw error("expected ',' or ']' in an array")
        }
    }

    mutating func string() throws(JSONSyntaxError) -> String {
        index += 1
        let start = index
        // Fast path: no escapes.
        while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\") {
            if bytes[index] < 0x20 { throw error("control character in a string") }
            index += 1
        }
        guard index < bytes.count else { throw error("unterminated string") }
        if bytes[index] == UInt8(ascii: "\"") {
            defer { index += 1 }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }
        var scalars = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return String(decoding: scalars, as: UTF8.self)
            }
            if byte != UInt8(ascii: "\\") {
                if byte < 0x20 { throw error("control character in a string") }
                scalars.append(byte)
                index += 1
                continue
            }
            index += 1
            guard index < bytes.count else { break }
            switch bytes[index] {
            case UInt8(ascii: "\""): scalars.append(0x22)
            case UInt8(ascii: "\\"): scalars.append(0x5C)
            case UInt8(ascii: "/"): scalars.append(0x2F)
            case UInt8(ascii: "b"): scalars.append(0x08)
            case UInt8(ascii: "f"): scalars.append(0x0C)
            case UInt8(ascii: "n"): scalars.append(0x0A)
            case UInt8(ascii: "r"): scalars.append(0x0D)
            case UInt8(ascii: "t"): scalars.append(0x09)
            case UInt8(ascii: "u"):
                var code = try hex4()
                if (0xD800...0xDBFF).contains(code), index + 2 < bytes.count, bytes[index + 1] == UInt8(ascii: "\\"),
                   bytes[index + 2] == UInt8(ascii: "u") {
                    let highEnd = index
                    index += 2
                    let low = try hex4()
                    if (0xDC00...0xDFFF).contains(low) {
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    } else {
                        index = highEnd  // a lone high surrogate (U+FFFD); the next escape is read on its own
                    }
                }
                // A lone surrogate is no scalar: U+FFFD, as a UTF-8 decoder replaces what is not.
                scalars.append(contentsOf: Array(String(UnicodeScalar(code) ?? "\u{FFFD}").utf8))
            default: throw error("unknown escape in a string")
            }
            index += 1
        }
        throw error("unterminated string")
    }

    mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
        guard index + 4 < bytes.count else { throw error("short \\u escape") }
        var value: UInt32 = 0
        for offset in 1...4 {
            let byte = bytes[index + offset]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("bad \\u escape")
            }
            value = value * 16 + digit
        }
        index += 4
        return value
    }

    mutating func number() throws(JSONSyntaxError) -> Double {
        let start = index
        var isInteger = true
        var integer: Int64 = 0
        var negative = false
        if bytes[index] == UInt8(ascii: "-") { negative = true; index += 1 }
        var digits = 0
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
            if digits < 18 { integer = integer * 10 + Int64(bytes[index] - UInt8(ascii: "0")) } else { isInteger = false }
            digits += 1
            index += 1
        }
        if digits == 0 { throw error("expected a digit") }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") || bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index])
                || bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") || bytes[index] == UInt8(ascii: "+")
                || bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: ".") {
                index += 1
            }
        }
        if isInteger { return Double(negative ? -integer : integer) }
        guard let value = Double(String(decoding: bytes[start..<index], as: UTF8.self)) else { throw error("bad number") }
        return value
    }
}

extension ResourceObject {
    /// Builds a resource from a parsed JSON object (the fast path for stored resources).
    init?(json: JSONValue) {
        guard let object = json.object else { return nil }
        id = object["id"]?.string ?? object["id"]?.int.map(String.init) ?? ""
        type = object["type"]?.string ?? ""
        href = object["href"]?.string
        attributes = object["attributes"]?.object ?? [:]
        relationships = object["relationships"]?.object?.compactMapValues(Relationship.init(json:)) ?? [:]
        views = object["views"]?.object?.compactMapValues(Relationship.init(json:)) ?? [:]
        meta = object["meta"]
    }
}

extension ResourceObject.Relationship {
    init?(json: JSONValue) {
        guard let object = json.object else { return nil }
        self.init(href: object["href"]?.string, next: object["next"]?.string, attributes: object["attributes"]?.object,
                  data: object["data"]?.array?.compactMap(ResourceObject.init(json:)) ?? [], meta: object["meta"])
    }
}
