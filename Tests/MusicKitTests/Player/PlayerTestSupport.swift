import AudioEngine
import AudioMeasurement
import AudioTestSupport
import Foundation
@testable import MusicKitCore
import Observation
import Synchronization
import XCTest

/// Library songs made from generated audio files.
enum GeneratedSongs {
    /// `signal` cut at `cuts` into FLAC files, as songs: played one after the other they must
    /// give `signal` back exactly.
    static func cut(_ signal: [Float], at cuts: [Int], into directory: URL, name: String = "part") throws -> [Song] {
        let bounds = [0] + cuts + [signal.count / 2]
        return try zip(bounds, bounds.dropFirst()).enumerated().map { index, range in
            let url = directory.appendingPathComponent("\(name)-\(index + 1).flac")
            try writeAudioFile(url, Array(signal[range.0 * 2 ..< range.1 * 2]),
                               tags: .init(title: "\(name) \(index + 1)", artist: "Test Artist", album: "Test Album"))
            return Song(fileURL: url)
        }
    }

    /// One song per frequency, each a tone `frames` long (distinct, so the capture shows which played).
    static func tones(_ frequencies: [Double], frames: Int, into directory: URL,
                      name: String = "Tone") throws -> (songs: [Song], signals: [[Float]]) {
        var songs: [Song] = []
        var signals: [[Float]] = []
        for (index, hz) in frequencies.enumerated() {
            let signal = TestSignal.tone(hz: hz, frames: frames, sampleRate: 44_100, channels: 2)
            let url = directory.appendingPathComponent("\(name)-\(index + 1).flac")
            try writeAudioFile(url, signal, tags: .init(title: "\(name) \(index + 1)", artist: "Test Artist"))
            songs.append(Song(fileURL: url))
            signals.append(signal)
        }
        return (songs, signals)
    }
}

/// Collects a player's events (its `events()` stream) for assertions.
final class PlayerEventLog: @unchecked Sendable {
    private let recorded = Mutex<[ApplicationMusicPlayer.Event]>([])
    private var task: Task<Void, Never>?

    init(_ player: ApplicationMusicPlayer) {
        let stream = player.events()
        task = Task { [weak self] in
            for await event in stream { self?.recorded.withLock { $0.append(event) } }
        }
    }

    deinit { task?.cancel() }

    var events: [ApplicationMusicPlayer.Event] { recorded.withLock { $0 } }

    /// Titles of the entries started, in order.
    var startedTitles: [String] {
        events.compactMap { if case .entryStarted(let entry) = $0 { entry.title } else { nil } }
    }

    var failures: [(title: String?, reason: String)] {
        events.compactMap { if case .entryFailed(let entry, let reason) = $0 { (entry?.title, reason) } else { nil } }
    }

    var finished: Bool { events.contains(.queueFinished) }

    /// Waits until `predicate` holds; fails the test after `timeout`.
    @discardableResult
    func wait(_ description: String, timeout: TimeInterval = 10, file: StaticString = #filePath, line: UInt = #line,
              until predicate: (PlayerEventLog) -> Bool) async -> Bool {
        await eventually(description, timeout: timeout, file: file, line: line, { predicate(self) }) { "events: \(self.events)" }
    }
}

/// The values an observable expression took, as `withObservationTracking` reports them: the
/// value when tracking starts, then each new value after a change. `onChange` comes before
/// the new value is stored, so each change is read on a queue of its own until the value
/// differs from the last one recorded (changes closer together than that may be seen as one).
final class ObservedValues<Value: Equatable & Sendable>: @unchecked Sendable {
    private let recorded = Mutex<[Value]>([])
    private let read: @Sendable () -> Value
    private let queue = DispatchQueue(label: "ObservedValues")

    init(_ read: @escaping @Sendable () -> Value) {
        self.read = read
        queue.sync {
            track()
            record(read())
        }
    }

    /// Registers for the next change.
    private func track() {
        _ = withObservationTracking { read() } onChange: { [weak self] in
            self?.queue.async { [weak self] in self?.changed() }
        }
    }

    private func changed() {
        let last = values.last
        track()  // before reading: a change from now on is not missed
        let deadline = Date(timeIntervalSinceNow: 0.2)
        var value = read()
        while value == last && Date() < deadline {
            usleep(200)
            value = read()
        }
        record(value)
    }

    private func record(_ value: Value) {
        recorded.withLock { values in
            if values.last != value { values.append(value) }
        }
    }

    var values: [Value] { recorded.withLock { $0 } }

    @discardableResult
    func wait(for description: String, timeout: TimeInterval = 10, file: StaticString = #filePath, line: UInt = #line,
              until predicate: ([Value]) -> Bool) async -> Bool {
        await eventually(description, timeout: timeout, file: file, line: line, { predicate(self.values) }) {
            "observed: \(self.values)"
        }
    }
}

/// Waits (suspending, not blocking: async tests must not hold a thread of the small cooperative
/// pool while the player needs it) until `condition` holds; fails the test after `timeout`.
@discardableResult
func eventually(_ description: String, timeout: TimeInterval = 10, file: StaticString = #filePath, line: UInt = #line,
                _ condition: () -> Bool, detail: () -> String = { "" }) async -> Bool {
    let deadline = Date(timeIntervalSinceNow: timeout)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(2))
    }
    XCTFail("no \(description) within \(timeout) s; \(detail())", file: file, line: line)
    return false
}

/// `XCTUnwrap` for a value that needs `await` (XCTUnwrap's autoclosure cannot await).
func unwrapped<T>(_ value: T?, file: StaticString = #filePath, line: UInt = #line) throws -> T {
    try XCTUnwrap(value, file: file, line: line)
}

/// Authorizes the test environment's app (players play catalog content only when authorized).
func authorizeTestApp() throws {
    try MusicAuthorizationSettings.set(.authorized, for: MusicKitEnvironment.current.applicationIdentifier)
}

/// A player writing into ALSA's `file` capture at `capture`, stopped (and its history written)
/// when `testCase` ends.
func makeCapturePlayer(_ capture: URL, for testCase: XCTestCase) -> ApplicationMusicPlayer {
    let player = ApplicationMusicPlayer(engineConfiguration: captureConfiguration(capture))
    testCase.addTeardownBlock {
        player.stop()
        player.waitForHistoryWrites()
    }
    return player
}
