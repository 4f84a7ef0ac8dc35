@testable import AudioEngine
import AudioTestSupport
import Foundation
import Glibc
import Synchronization
import XCTest

/// The native output's connection to the sound server, against a server that misbehaves.
final class PulseConnectionTests: XCTestCase {
    /// A server that accepts the connection and never answers (a hung PulseAudio, a socket
    /// left by something else): libpulse would wait for it 30 s. A `stop()` gives the opening
    /// up within its 50 ms checks and `play()` fails with `.stopped` (issue #42: the open held
    /// the starting thread, and the daemon's next request behind it).
    func testAStopGivesUpAnOpeningThatTheServerNeverAnswers() throws {
        guard case .success = LibPulse.loaded else { throw XCTSkip("libpulse is not installed") }
        let directory = try makeTemporaryDirectory(self)
        let server = try SilentUnixServer(path: directory.appendingPathComponent("native").path)
        defer { server.close() }
        let previous = getenv("PULSE_SERVER").map { String(cString: $0) }
        setenv("PULSE_SERVER", "unix:\(server.path)", 1)
        defer { if let previous { setenv("PULSE_SERVER", previous, 1) } else { unsetenv("PULSE_SERVER") } }

        let file = directory.appendingPathComponent("tone.flac")
        try writeAudioFile(file, TestSignal.tone(hz: 440, frames: 44_100, sampleRate: 44_100, channels: 2))
        var configuration = AudioEngineConfiguration(deviceName: "pulseaudio")
        configuration.realtimePriority = nil
        let engine = AudioEngine(configuration: configuration)
        engine.setQueue(AudioEntryList(paths: [file.path]))
        let result = Mutex<Result<Void, AudioEngineError>?>(nil)
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let outcome = Result { () throws(AudioEngineError) in try engine.play() }
            result.withLock { $0 = outcome }
            finished.signal()
        }
        XCTAssertTrue(server.waitForConnection(timeout: 10), "libpulse connected to the silent server")
        XCTAssertEqual(finished.wait(timeout: .now() + 0.3), .timedOut, "the opening waits for the server")
        engine.stop()
        XCTAssertEqual(finished.wait(timeout: .now() + 5), .success, "given up long before libpulse's 30 s")
        let failure: AudioEngineError? = result.withLock { outcome in
            if case .failure(let error) = outcome { return error }
            return nil
        }
        XCTAssertEqual(failure, .stopped, "the stop's, not the device's error")
    }
}

/// A Unix socket that accepts connections and never says a word.
final class SilentUnixServer: @unchecked Sendable {
    // @unchecked: `accepted` is behind `condition`; the descriptor is set in init.
    let path: String
    private let descriptor: Int32
    private let condition = NSCondition()
    private var accepted: [Int32] = []

    init(path: String) throws {
        self.path = path
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            _ = path.utf8CString.withUnsafeBytes { bytes.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0.prefix(bytes.count - 1))) }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(descriptor, 8) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        let listener = descriptor
        Thread.detachNewThread { [self] in
            while true {
                let client = accept(listener, nil, nil)
                if client < 0 { return }  // closed
                condition.lock()
                accepted.append(client)
                condition.broadcast()
                condition.unlock()
            }
        }
    }

    /// Connections accepted so far.
    var connectionCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return accepted.count
    }

    /// Waits until more than `count` connections were accepted.
    func waitForConnection(beyond count: Int = 0, timeout: TimeInterval) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while accepted.count <= count { if !condition.wait(until: deadline) { return accepted.count > count } }
        return true
    }

    func close() {
        shutdown(descriptor, Int32(SHUT_RDWR))
        Glibc.close(descriptor)
        condition.lock()
        accepted.forEach { _ = Glibc.close($0) }
        accepted = []
        condition.unlock()
    }
}
