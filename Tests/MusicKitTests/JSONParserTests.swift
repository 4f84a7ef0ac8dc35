import Foundation
@testable import MusicKitCore
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

    /// A lone surrogate (a remote server, a client, a document may send one) is U+FFFD, and
    /// the escape after it is read on its own: it crashed the daemon (issue #42).
    func testALoneSurrogateIsAReplacementCharacterNotACrash() throws {
        XCTAssertEqual(try JSONValue.parse(#""\ud800\u0041""#).string, "\u{FFFD}A")
        XCTAssertEqual(try JSONValue.parse(#""\udc00x""#).string, "\u{FFFD}x")
        XCTAssertEqual(try JSONValue.parse(#""a\ud83c""#).string, "a\u{FFFD}")
        XCTAssertEqual(try JSONValue.parse(#""\ud83c\ud83c\udfb5""#).string, "\u{FFFD}🎵")
    }

    /// JSON has no NaN or infinity: such a number is written as null, so a reply or the state
    /// file always parses again (`"time": inf` made every client fail, issue #42).
    func testNonFiniteNumbersAreWrittenAsNull() throws {
        let value = JSONValue.object(["time": .number(.infinity), "rate": .number(-.infinity), "x": .number(.nan), "y": .number(1.5)])
        XCTAssertEqual(value.serialized, #"{"rate":null,"time":null,"x":null,"y":1.5}"#)
        XCTAssertEqual(try JSONValue.parse(value.serialized)["y"]?.number, 1.5)
    }

    func testSerializedTextParsesBack() throws {
        let value = JSONValue.object(["s": .string("tab\tquote\"é"), "a": .array([.number(1), .number(0.5), .null]), "t": .bool(true)])
        XCTAssertEqual(try JSONValue.parse(value.serialized), value)
    }
}
