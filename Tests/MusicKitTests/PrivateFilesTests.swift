import PlatformSupport
import AudioTestSupport
import Foundation
@testable import MusicKitCore
import XCTest

/// The person's files: nothing lost on a crash, nothing readable by others, nothing written
/// through a planted symlink, no litter left by processes that died.
final class PrivateFilesTests: XCTestCase {
    private func mode(_ url: URL) -> Int {
        var status = stat()
        guard lstat(url.path, &status) == 0 else { return -1 }
        return Int(status.st_mode & 0o777)
    }

    func testAReplacedFileKeepsItsOldContentUntilTheNewOneIsComplete() throws {
        let folder = try makeTemporaryDirectory(self)
        let destination = folder.appendingPathComponent("document.json")
        try Data("old".utf8).write(to: destination)
        // The new content comes slowly through a FIFO, as a big copy would.
        let fifo = folder.appendingPathComponent("incoming")
        XCTAssertEqual(mkfifo(fifo.path, 0o600), 0)
        let copied = expectation(description: "copied")
        let failure = LockedBox<(any Error)?>(nil)
        Thread.detachNewThread {
            do { try PrivateFiles.copyAtomically(from: fifo, to: destination) } catch { failure.value = error }
            copied.fulfill()
        }
        let writer = try FileHandle(forWritingTo: fifo)
        writer.write(Data(repeating: UInt8(ascii: "n"), count: 100_000))
        usleep(100_000)
        XCTAssertEqual(try Data(contentsOf: destination), Data("old".utf8), "half a copy never replaces the document")
        writer.write(Data(repeating: UInt8(ascii: "n"), count: 100_000))
        try writer.close()
        wait(for: [copied], timeout: 10)
        XCTAssertNil(failure.value)
        XCTAssertEqual(try Data(contentsOf: destination).count, 200_000, "the complete copy replaced it")
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".tmp") }
        XCTAssertEqual(left, [], "no temporary left behind")
    }

    func testFoldersAreOwnerOnlyAndFilesTooWhateverTheUmask() async throws {
        let previous = umask(0o022)
        defer { umask(previous) }
        let environment = try useTemporaryEnvironment(self)
        try setAccount { $0.storefront = "us" }
        try MusicAuthorizationSettings.set(.authorized, for: "musickit-tests")
        let library = try LibraryStore(path: environment.dataDirectory.appendingPathComponent("library.sqlite"))
        defer { withExtendedLifetime(library) {} }  // open: its -wal and -shm are there
        let document = try makeTemporaryDirectory(self).appendingPathComponent("mine.json")
        try Data(#"{"storefront":"us","data":[{"id":"900000001","type":"songs","attributes":{"name":"Mine"}}]}"#.utf8)
            .write(to: document)
        _ = try MusicCatalogIndex.importDocuments([document], environment: environment)
        // Artwork scaled for a screen (issue #42: libpng's file writer made it 0644).
        let cover = document.deletingLastPathComponent().appendingPathComponent("cover.png")
        let red = RGBAImage(width: 4, height: 4, pixels: Array(repeating: [255, 0, 0, 255], count: 16).flatMap { $0 })
        try red.pngData().write(to: cover)
        let scaled = try ArtworkCache.file(for: cover.path, width: 2, height: 2)
        XCTAssertEqual(try RGBAImage(imageFile: scaled.path), red.scaled(width: 2, height: 2), "the scaled image, readable")

        XCTAssertEqual(mode(environment.configDirectory), 0o700, "config folder")
        XCTAssertEqual(mode(environment.dataDirectory), 0o700, "data folder")
        let files = try [environment.configDirectory, environment.dataDirectory,
                         environment.dataDirectory.appendingPathComponent("catalog-documents"),
                         environment.dataDirectory.appendingPathComponent("artwork")].flatMap { folder in
            try FileManager.default.contentsOfDirectory(atPath: folder.path).map { folder.appendingPathComponent($0) }
        }
        let names = Set(files.map(\.lastPathComponent))
        for expected in ["account.json", "authorizations.json", "library.sqlite", "library.sqlite-wal", "catalog.sqlite", "mine.json", scaled.lastPathComponent] {
            XCTAssertTrue(names.contains(expected), "\(expected) among \(names.sorted())")
        }
        for file in files {
            var status = stat()
            lstat(file.path, &status)
            if status.st_mode & S_IFMT == S_IFDIR {
                XCTAssertEqual(mode(file), 0o700, "\(file.lastPathComponent) is the owner's only")
            } else {
                XCTAssertEqual(mode(file), 0o600, "\(file.lastPathComponent) is the owner's only")
            }
        }
    }

    func testAnOlderDatabaseReadableByOthersIsMadeOwnerOnly() throws {
        let folder = try makeTemporaryDirectory(self)
        let path = folder.appendingPathComponent("library.sqlite")
        _ = try LibraryStore(path: path)
        chmod(path.path, 0o644)
        _ = try LibraryStore(path: path)
        XCTAssertEqual(mode(path), 0o600)
    }

    func testADatabaseIsNeverOpenedThroughASymlink() throws {
        let folder = try makeTemporaryDirectory(self)
        let foreign = folder.appendingPathComponent("foreign.db")
        try Data("someone else's file".utf8).write(to: foreign)
        let path = folder.appendingPathComponent("library.sqlite")
        XCTAssertEqual(symlink(foreign.path, path.path), 0)
        XCTAssertThrowsError(try LibraryStore(path: path)) { error in
            XCTAssertTrue("\(error)".contains("symbolic link"), "\(error)")
        }
        XCTAssertEqual(try Data(contentsOf: foreign), Data("someone else's file".utf8), "the link's target is untouched")
    }

    func testASettingsFileReplacesASymlinkAtItsNameInsteadOfWritingThroughIt() throws {
        let folder = try makeTemporaryDirectory(self)
        let target = folder.appendingPathComponent("target")
        try Data("keep".utf8).write(to: target)
        let url = folder.appendingPathComponent("account.json")
        XCTAssertEqual(symlink(target.path, url.path), 0)
        try SettingsFile<MusicAccountSettings>(url: url).write(MusicAccountSettings())
        XCTAssertEqual(try Data(contentsOf: target), Data("keep".utf8), "nothing written through the link")
        XCTAssertEqual(mode(url), 0o600, "a regular file of the owner's now")
    }

    func testTemporariesOfProcessesThatAreGoneAreRemovedAndOthersKept() throws {
        let folder = try makeTemporaryDirectory(self)
        let gone = Process()
        gone.executableURL = URL(fileURLWithPath: "/bin/true")
        try gone.run()
        gone.waitUntilExit()
        let deadPID = gone.processIdentifier
        let dead = [".catalog.sqlite.\(deadPID).building", ".account.json.\(deadPID).k3x9.tmp",
                    ".catalog.sqlite.\(deadPID).building-journal"]
        let alive = [".catalog.sqlite.\(getpid()).building", ".account.json.lock", "catalog.sqlite"]
        for name in dead + alive { try Data().write(to: folder.appendingPathComponent(name)) }
        PrivateFiles.removeStaleTemporaries(in: folder)
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: folder.path))
        XCTAssertEqual(left, Set(alive))
    }
}

/// A value shared with another thread.
final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
