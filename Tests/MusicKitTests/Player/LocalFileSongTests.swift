import Foundation
@testable import MusicKit
import XCTest

/// `Song(fileURL:)`'s path, written out instead of Foundation's standardization.
final class LocalFileSongTests: XCTestCase {
    func testTheSongsPathIsTheStandardizedFileURLsPath() {
        let paths = ["/tmp/a.wav", "/tmp/./a.wav", "/tmp/x/../a.wav", "/tmp//music///a.flac", "/../a.wav",
                     "/tmp/x/y/../../a.wav", "/tmp/dir/", "/", "/tmp/.hidden/..a.wav", "relative/./x/../song.mp3",
                     "../up.ogg", "/tmp/a b/ü.opus"]
        for path in paths {
            let url = URL(fileURLWithPath: path)
            XCTAssertEqual(Song.standardizedPath(of: url), url.standardizedFileURL.path, path)
        }
    }

    func testTheSongForAFileRecordsItsStandardizedPath() {
        let song = Song(fileURL: URL(fileURLWithPath: "/nonexistent/folder/../missing.flac"))
        XCTAssertEqual(song.resource.string("filePath"), "/nonexistent/missing.flac")
        XCTAssertEqual(song.title, "missing")
    }
}
