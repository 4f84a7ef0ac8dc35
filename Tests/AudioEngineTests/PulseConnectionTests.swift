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
