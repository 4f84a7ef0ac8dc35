import Foundation
@testable import MusicKit
import XCTest

/// The JSON parser behind catalog import and stored resources agrees with JSONDecoder.
final class JSONParserTests: XCTestCase {
    func testParsesWhatJSONDecoderParses() throws {
        let text = #"{"a": [1, -2.5, 3e2, true, false, null], "b": {"c": "d\"e\\f\n\u00e9\ud83c\udfb5"}, "n": 1640832991}"#
        let parsed = try JSONValue.parse(text)
        let decoded = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        XCTAssertEqual(parsed, decoded)
        XCTAssertEqual(parsed["b"]?["c"]?.string, "d\"e\\f\né🎵")
        XCTAssertEqual(parsed["n"]?.int, 1_640_832_991)
        XCTAssertEqual(parsed["a"]?.array?[2].number, 300)
    }

    func testEveryFixtureParsesTheSameAsWithJSONDecoder() throws {
        let folder = try XCTUnwrap(Bundle.module.url(forResource: "Fixtures", withExtension: nil))
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "json" }
        XCTAssertGreaterThan(files.count, 40)
        for file in files {
            let data = try Data(contentsOf: file)
            XCTAssertEqual(try JSONValue.parse(data), try JSONDecoder().decode(JSONValue.self, from: data), file.lastPathComponent)
        }
    }

    func testSyntaxErrorsSayWhere() {
        XCTAssertThrowsError(try JSONValue.parse("{\n  \"a\": [1, 2,\n  }")) { error in
            let syntax = error as? JSONSyntaxError
            XCTAssertEqual(syntax?.line, 3)
            XCTAssertEqual(syntax?.column, 3)
        }
        XCTAssertThrowsError(try JSONValue.parse("[1] 2"))
        XCTAssertThrowsError(try JSONValue.parse("\"unterminated"))
        XCTAssertThrowsError(try JSONValue.parse(String(repeating: "[", count: 1_000)), "depth is limited")
    }

    func testSerializedTextParsesBack() throws {
        let value = JSONValue.object(["s": .string("tab\tquote\"é"), "a": .array([.number(1), .number(0.5), .null]), "t": .bool(true)])
        XCTAssertEqual(try JSONValue.parse(value.serialized), value)
    }
}
