import CEarlyRequest
import Foundation
import Glibc
import Synchronization
@testable import MusicKitCore
import XCTest

/// The transport commands' request sent at process start (Sources/CEarlyRequest/EarlyRequest.c):
/// the same bytes as the Swift client's, to the same socket, and only for the commands that
/// send exactly that request. (`musickit next` end to end, one skip: CommandLineTests.)
final class EarlyRequestTests: XCTestCase {
    func testTheRequestIsTheFrameTheSwiftClientWrites() throws {
        for (command, operation) in [("next", "next"), ("previous", "previous"), ("resume", "play")] {
            let mapped = try XCTUnwrap(musickit_early_request_operation(command), command)
            XCTAssertEqual(String(cString: mapped), operation)
            var buffer = [CChar](repeating: 0, count: 128)
            let length = Int(musickit_early_request_frame(mapped, 1, &buffer, buffer.count))
            XCTAssertGreaterThan(length, 4)
            let written = try SystemPlayerWire.frame(["id": 1, "op": .string(operation), "args": .object([:])])
            XCTAssertEqual(buffer[0..<length].map { UInt8(bitPattern: $0) }, written, operation)
        }
        var small = [CChar](repeating: 0, count: 16)
        XCTAssertEqual(musickit_early_request_frame("next", 1, &small, small.count), -1, "no frame cut short")
    }

    func testOnlyTheTransportCommandsSendAtStart() {
        for command in ["status", "pause", "stop", "play", "queue", "seek", "daemon", "--help", "nex"] {
            XCTAssertNil(musickit_early_request_operation(command), command)
        }
    }

    /// The socket is the one MusicKitEnvironment finds, for each way the runtime folder is set.
    func testTheSocketIsTheOneTheSwiftClientFinds() throws {
        let names = ["MUSICKIT_RUNTIME_DIR", "XDG_RUNTIME_DIR"]
        let saved = names.map { getenv($0).map { String(cString: $0) } }
        defer {
            for (name, value) in zip(names, saved) {
                if let value { setenv(name, value, 1) } else { unsetenv(name) }
            }
        }
        let cases: [(String?, String?)] = [("/tmp/a-runtime", "/run/user/1000"), ("", "/run/user/1000"), (nil, "/run/user/1000"),
                                           (nil, nil), ("", ""), ("/tmp/with space", nil)]
        for (runtime, xdg) in cases {
            for (name, value) in zip(names, [runtime, xdg]) {
                if let value { setenv(name, value, 1) } else { unsetenv(name) }
            }
            var buffer = [CChar](repeating: 0, count: 108)
            XCTAssertGreaterThan(musickit_early_request_socket_path(&buffer, buffer.count), 0)
            XCTAssertEqual(buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }, SystemPlayerWire.socketURL(MusicKitEnvironment.fromProcessEnvironment()).path,
                           "MUSICKIT_RUNTIME_DIR=\(runtime ?? "unset") XDG_RUNTIME_DIR=\(xdg ?? "unset")")
        }
    }

    /// With a daemon's socket listening: `musickit previous` connects, sends request 1, waits
    /// until the answer can be read (the process stays idle while the daemon works), and hands
    /// the socket over once; other argument lists send nothing; no listener, nothing is kept.
    func testTheRequestIsSentToTheListeningSocketAndHandedOverOnce() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("musickit-early-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let saved = getenv("MUSICKIT_RUNTIME_DIR").map { String(cString: $0) }
        setenv("MUSICKIT_RUNTIME_DIR", directory.path, 1)
        defer { if let saved { setenv("MUSICKIT_RUNTIME_DIR", saved, 1) } else { unsetenv("MUSICKIT_RUNTIME_DIR") } }

        start(["musickit", "next"])
        XCTAssertEqual(musickit_early_request_take(nil), -1, "no daemon listens: nothing sent, nothing kept")

        let listener = try SystemPlayerWire.listen(at: directory.appendingPathComponent("player.sock").path)
        defer { close(listener) }
        for arguments in [["musickit", "next", "now"], ["musickit", "status"], ["musickit"]] {
            start(arguments)
            XCTAssertEqual(musickit_early_request_take(nil), -1, arguments.joined(separator: " "))
        }
        var pending = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        XCTAssertEqual(poll(&pending, 1, 0), 0, "the argument lists that send nothing did not connect")

        // The daemon's side: takes the request, then answers it.
        let received = Mutex<SystemPlayerWire.Message?>(nil)
        let answered = Atomic<Bool>(false)
        let daemon = Thread {
            let accepted = accept(listener, nil, nil)
            guard accepted >= 0 else { return }
            defer { close(accepted) }
            received.withLock { $0 = try? SystemPlayerWire.receive(on: accepted) }
            usleep(100_000)  // a start that did not wait would have returned by now
            answered.store(true, ordering: .sequentiallyConsistent)
            try? SystemPlayerWire.send(["id": 1, "ok": true], on: accepted)
        }
        daemon.start()
        start(["musickit", "previous"])
        XCTAssertTrue(answered.load(ordering: .sequentiallyConsistent), "the start waited for the answer")
        let request = try XCTUnwrap(received.withLock { $0 })
        XCTAssertEqual(request["op"]?.string, "previous")
        XCTAssertEqual(request["id"]?.int, 1)
        XCTAssertEqual(request["args"]?.object?.isEmpty, true)

        var operation: UnsafePointer<CChar>?
        let descriptor = musickit_early_request_take(&operation)
        XCTAssertGreaterThanOrEqual(descriptor, 0)
        defer { close(descriptor) }
        XCTAssertEqual(operation.map { String(cString: $0) }, "previous")
        XCTAssertEqual(musickit_early_request_take(nil), -1, "handed over once")
        XCTAssertEqual(try SystemPlayerWire.receive(on: descriptor)?["ok"]?.bool, true, "the answer is left for the Swift side")
    }

    private func start(_ arguments: [String]) {
        var storage = arguments.map { strdup($0) }
        defer { storage.forEach { free($0) } }
        musickit_early_request_start(Int32(arguments.count), &storage)
    }
}
