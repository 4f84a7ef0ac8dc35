@testable import AudioEngine
import AudioMeasurement
import AudioTestSupport
import Foundation
import Glibc
import Synchronization
import XCTest

/// The engine playing to Snapcast's pipe source (issue #46): a private snapserver and a
/// snapclient on loopback, the client playing into the test sink, heard at its monitor.
final class SnapcastOutputTests: XCTestCase {
    private var directory: URL!
    private var snapcast: SnapcastServer?

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory(self)
        guard SnapcastServer.isInstalled else {
            throw XCTSkip("snapserver and snapclient are not installed (scripts/setup-system installs them)")
        }
    }

    override func tearDown() {
        snapcast?.stop()
        snapcast = nil
    }

    /// Waits until `condition` holds, at most `seconds`.
    private func waitUntil(_ description: String, seconds: Double = 10, _ condition: () -> Bool) throws {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while !condition() {
            guard Date() < deadline else { throw XCTSkip("timed out waiting for \(description)") }
            usleep(10_000)
        }
    }

    /// snapserver with a pipe source at 44.1 kHz (PCM to its clients, `bufferMilliseconds` of
    /// buffer) and one snapclient connected to it, playing into the test server's only sink.
    /// Returns the FIFO's path.
    private func startSnapcast(bufferMilliseconds: Int) throws -> String {
        _ = try AudioTestEnvironment.requirePulse()
        let server = try SnapcastServer(directory: directory, bufferMilliseconds: bufferMilliseconds, codec: "pcm")
        snapcast = server
        try server.addRoom(1)
        return server.fifo
    }

    /// An album of two songs cut at an odd frame, played through Snapcast: heard whole, from the
    /// first song's start to the second's end without a gap, about Snapcast's buffer after
    /// `play()`, and the second song announced when the room plays it. (Not bit for bit: a
    /// snapclient inserts or drops a sample now and then to stay in sync with the server.)
    func testAnAlbumIsHeardWholeAndGaplessInTheRoom() throws {
        let fifo = try startSnapcast(bufferMilliseconds: 300)
        let recorder = try SharedMonitor.recorder()
        let signal = TestSignal.sweep(frames: 88_200, startHz: 300, endHz: 3_000)
        let cut = 37_777
        let first = directory.appendingPathComponent("1.flac"), second = directory.appendingPathComponent("2.flac")
        try writeAudioFile(first, Array(signal[..<(cut * 2)]))
        try writeAudioFile(second, Array(signal[(cut * 2)...]))

        let engine = AudioEngine(configuration: AudioTestEnvironment.sinkConfiguration(deviceName: "snapcast:\(fifo)?rate=44100&buffer=300"))
        let seen = Mutex<(secondAnnounced: UInt64?, finished: Bool)>((nil, false))
        engine.setEventHandler { event in
            let now = monotonicNanoseconds()
            seen.withLock { seen in
                if case .entryStarted(let token, _) = event, token.rawValue == 2 { seen.secondAnnounced = now }
                if event == .queueFinished { seen.finished = true }
            }
        }
        engine.setQueue(AudioEntryList(paths: [first.path, second.path]))
        let call = monotonicNanoseconds()
        try engine.play()
        try waitUntil("the end of the album", seconds: 15) { seen.withLock(\.finished) }
        let secondAnnounced = seen.withLock(\.secondAnnounced)
        let statistics = engine.statistics
        engine.stop()
        usleep(300_000)

        let chunks = recorder.chunks(arrivedAfter: call)
        let samples = chunks.flatMap(\.samples)
        let frames = samples.count / 2
        let loud = { (frame: Int) in abs(Int(samples[frame * 2])) > 200 || abs(Int(samples[frame * 2 + 1])) > 200 }
        let heardFirst = try XCTUnwrap((0..<frames).first(where: loud), "the album was heard")
        let heardLast = try XCTUnwrap((0..<frames).last(where: loud))
        XCTAssertEqual(Double(heardLast - heardFirst + 1), 88_200, accuracy: 441, "the whole album, within 10 ms")
        XCTAssertLessThanOrEqual(SignalAnalysis.longestQuietRun(samples, threshold: 200), 8, "no gap, at the songs' boundary or anywhere")
        XCTAssertEqual(statistics.underruns, 0)
        XCTAssertEqual(statistics.xruns, 0)

        // When: the recording's first chunk arrived after the call; frames count on from it.
        let chunkStart = try XCTUnwrap(chunks.first).arrivalNanoseconds - UInt64(try XCTUnwrap(chunks.first).samples.count / 2) * 1_000_000_000 / 44_100
        let heardMilliseconds = (Double(chunkStart) + Double(heardFirst) * 1e9 / 44_100 - Double(call)) / 1e6
        XCTAssertGreaterThan(heardMilliseconds, 250, "not before Snapcast's 300 ms buffer")
        XCTAssertLessThan(heardMilliseconds, 800, "within Snapcast's buffer and the client's own")
        let boundaryHeard = heardMilliseconds + Double(cut) * 1_000 / 44_100
        let announced = Double(try XCTUnwrap(secondAnnounced, "the second song was announced") - call) / 1e6
        XCTAssertEqual(announced, boundaryHeard, accuracy: 30, "announced at \(announced) ms, heard at \(boundaryHeard) ms")
        print("snapcast: first sound \(String(format: "%.1f", heardMilliseconds)) ms after play(); second song announced "
              + "\(String(format: "%.1f", announced - boundaryHeard)) ms from when it was heard")
    }

    /// Two rooms — two snapclients playing into two sinks of the test server, the second joining
    /// while the song plays and going away before it ends, the first playing on — hear it at the
    /// same moments: the clicks of a click track reach
    /// both sinks' monitors within 2 ms of each other, as a median from 1 s after the second
    /// room joined (times from each recorder's chunk arrivals, the same 2 ms recorder on both,
    /// so their own latency cancels, but not their scheduling).
    func testTwoRoomsHearTheSongInSyncOneJoiningLateAndLeavingEarly() throws {
        let fifo = try startSnapcast(bufferMilliseconds: 300)
        let sink2 = try LoadedNullSink(name: "musickit_room2", sampleRate: 44_100)
        defer { sink2.unload() }
        let room1 = try SharedMonitor.recorder()
        let room2 = try MonitorRecorder(source: sink2.monitor, latencyMilliseconds: 2)
        defer { room2.stop() }
        room2.warmUp(seconds: 0.5)

        // 8 s of silence with a one-frame click every 250 ms.
        let rate = 44_100, seconds = 8
        var signal = [Float](repeating: 0, count: rate * seconds * 2)
        let clicks = stride(from: rate / 4 + 7, to: rate * seconds, by: rate / 4).map { $0 }
        for frame in clicks { signal[frame * 2] = 0.9; signal[frame * 2 + 1] = 0.9 }
        let song = directory.appendingPathComponent("clicks.flac")
        try writeAudioFile(song, signal)

        let engine = AudioEngine(configuration: AudioTestEnvironment.sinkConfiguration(deviceName: "snapcast:\(fifo)?rate=44100&buffer=300"))
        let events = EventRecorder(engine)
        engine.setQueue(AudioEntryList(paths: [song.path]))
        let call = monotonicNanoseconds()
        try engine.play()
        defer { engine.stop() }
        Thread.sleep(forTimeInterval: 2)
        try XCTUnwrap(snapcast).addRoom(2, sink: sink2.name)  // joins 2 s in
        Thread.sleep(forTimeInterval: 4)
        let left = monotonicNanoseconds()
        try XCTUnwrap(snapcast).removeRoom(2)  // its machine goes away 6 s in
        events.waitForQueueFinished(timeout: 20)
        usleep(300_000)

        let heard1 = room1.clickTimes(after: call), heard2 = room2.clickTimes(after: call)
        XCTAssertEqual(heard1.count, clicks.count, "room 1 heard every click, also after room 2 went away")
        XCTAssertFalse(heard2.contains { $0 > Double(left) + 500e6 }, "room 2 went quiet when it went away")
        XCTAssertGreaterThan(heard2.count, 10, "room 2 heard the clicks while it was there (~4 s, 16 clicks)")
        // Each of room 2's clicks against room 1's nearest, from 1 s after it joined.
        let joined = Double(call) + 3e9
        let offsets = MonitorRecorder.offsets(heard2.filter { $0 > joined }, against: heard1)
        XCTAssertGreaterThan(offsets.count, 10, "clicks heard in both rooms: \(offsets)")
        let sorted = offsets.map(abs).sorted()
        let median = sorted[sorted.count / 2], largest = sorted.last ?? .infinity
        // Idle, the median was 0.10–0.80 ms (5 runs), the late room starting ~1–1.6 ms off and
        // within ±0.8 ms two seconds later; under CI's load once 1.25 ms, steadily, which two
        // recorders' timing cannot tell from the rooms' (Benchmarks/RESULTS.md): 2 ms is what
        // this measurement can judge here.
        XCTAssertLessThan(median, 2, "the rooms' median offset, ms: \(offsets)")
        XCTAssertLessThan(largest, 3, "the largest, ms: \(offsets)")
        print("snapcast rooms: \(offsets.map { String(format: "%.2f", $0) }) \(offsets.count) clicks, offset median \(String(format: "%.3f", median)) ms, "
              + "largest \(String(format: "%.3f", largest)) ms")
    }

    /// A skip and a pause are heard in the room after what the pipe still holds and Snapcast's
    /// buffer: the engine takes back only what it holds (a FIFO cannot be unread).
    func testASkipAndAPauseAreHeardAfterSnapcastsBuffer() throws {
        let fifo = try startSnapcast(bufferMilliseconds: 300)
        let recorder = try SharedMonitor.recorder()
        let silence = directory.appendingPathComponent("silence.flac"), tone = directory.appendingPathComponent("tone.flac")
        try writeAudioFile(silence, [Float](repeating: 0, count: 44_100 * 2 * 10))
        try writeAudioFile(tone, TestSignal.tone(hz: 440, frames: 44_100 * 10, sampleRate: 44_100, channels: 2, amplitude: 0.5))
        let engine = AudioEngine(configuration: AudioTestEnvironment.sinkConfiguration(deviceName: "snapcast:\(fifo)?rate=44100&buffer=300"))
        engine.setQueue(AudioEntryList(paths: [silence.path, tone.path]))
        try engine.play()
        defer { engine.stop() }
        Thread.sleep(forTimeInterval: 1.5)

        let skip = monotonicNanoseconds()
        engine.skipToNextEntry()
        Thread.sleep(forTimeInterval: 1)
        let skipHeard = try XCTUnwrap(recorder.levelChange(after: skip, toLoud: true), "the next song was heard")
        let pause = monotonicNanoseconds()
        engine.pause()
        Thread.sleep(forTimeInterval: 1)
        let pauseHeard = try XCTUnwrap(recorder.levelChange(after: pause, toLoud: false), "the pause was heard")
        // Snapcast's 300 ms, plus at most the pipe's ~93 ms and the engine's turn.
        for (what, milliseconds) in [("skip", skipHeard), ("pause", pauseHeard)] {
            XCTAssertGreaterThan(milliseconds, 280, "\(what): not before Snapcast's buffer")
            XCTAssertLessThan(milliseconds, 450, "\(what): the buffer, the pipe, and not more")
        }
        print("snapcast: skip heard \(String(format: "%.1f", skipHeard)) ms, pause \(String(format: "%.1f", pauseHeard)) ms after the call")
    }

    /// Names that are not a pipe source, and a FIFO no server reads, are reported as a failed
    /// output saying what is wrong, never as silence that plays on.
    func testAMissingOrSilentServerIsAFailedOutputThatSaysWhy() throws {
        let signal = TestSignal.tone(hz: 440, frames: 44_100 * 8, sampleRate: 44_100, channels: 2)
        let song = directory.appendingPathComponent("song.flac")
        try writeAudioFile(song, signal)
        func opening(_ name: String) -> String {
            let engine = AudioEngine(configuration: AudioTestEnvironment.sinkConfiguration(deviceName: name))
            engine.setQueue(AudioEntryList(paths: [song.path]))
            defer { engine.stop() }
            do {
                try engine.play()
                return "played"
            } catch {
                return "\(error)"
            }
        }
        XCTAssertTrue(opening("snapcast:relative/fifo").contains("give the path of snapserver's pipe source"))
        XCTAssertTrue(opening("snapcast:\(directory.path)/none").contains("is snapserver's pipe source there?"))
        XCTAssertTrue(opening("snapcast:\(song.path)").contains("is not a FIFO"))
        XCTAssertTrue(opening("snapcast:/tmp/x?speed=2").contains("unknown option 'speed=2'"))

        // A FIFO nobody reads: it fills, and after 3 s of no reading the output fails.
        let fifo = directory.appendingPathComponent("unread").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let engine = AudioEngine(configuration: AudioTestEnvironment.sinkConfiguration(deviceName: "snapcast:\(fifo)?rate=44100&buffer=300"))
        let events = EventRecorder(engine)
        engine.setQueue(AudioEntryList(paths: [song.path]))
        try engine.play()
        defer { engine.stop() }
        events.wait(for: "the output failed", timeout: 10) { event in
            if case .deviceFailed(let error) = event { "\(error)".contains("stopped reading") } else { false }
        }
    }
}
