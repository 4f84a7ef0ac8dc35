import Foundation
@testable import MusicKitCore
import XCTest

/// `Song(fileURL:)`'s path, written out instead of Foundation's standardization.
final class LocalFileSongTests: XCTestCase {
    func testTheSongsPathIsTheStandardizedFileURLsPath() {
        let paths = ["/tmp/a.wav", "/tmp/./a.wav", "/tmp/x/../a.wav", "/tmp//music///a.flac", "/../a.wav",
                     "/tmp/x/y/../../a.wav", "/tmp/dir/", "/", "/tmp/.hidden/..a.wav", "relative/./x/../song.mp3",
                     "../up.ogg", "/tmp/a b/ü.opus"]
        for path in paths {
            let url = URL(fileURLWithPath: path)
            XCTAssertEqual(Song.standardizedPath(path), url.standardizedFileURL.path, path)
            XCTAssertEqual(Song(filePath: path).resource.string("filePath"), Song(fileURL: url).resource.string("filePath"), path)
        }
    }

    func testASongWithoutTagsIsNamedAfterItsFileAsTheURLWouldName() {
        let paths = ["/tmp/a.wav", "/tmp/song.tar.gz", "/tmp/.hidden", "/tmp/.hidden.flac", "/tmp/noext", "/tmp/a b/ü.opus",
                     "relative/track 01.mp3", "/tmp/x/../Album/02 - Two.ogg"]
        for path in paths {
            let url = URL(fileURLWithPath: path)
            XCTAssertEqual(Song.nameWithoutExtension(ofFileAt: Song.standardizedPath(path)),
                           url.deletingPathExtension().lastPathComponent, path)
            XCTAssertEqual(Song(filePath: path).title, url.deletingPathExtension().lastPathComponent, path)
        }
    }

    func testTheSongForAFileRecordsItsStandardizedPath() {
        let song = Song(fileURL: URL(fileURLWithPath: "/nonexistent/folder/../missing.flac"))
        XCTAssertEqual(song.resource.string("filePath"), "/nonexistent/missing.flac")
        XCTAssertEqual(song.title, "missing")
    }
}
