import PlatformSupport
import AllocationCounter
@testable import AudioEngine
import AudioTestSupport
import Foundation
import XCTest

/// The audio thread's loop neither allocates nor frees, over thousands of periods and through
/// skips, seeks and pauses. (ThreadSanitizer runs allocate on every thread: scripts/test keeps
/// this test out of them.)
final class AudioThreadAllocationTests: XCTestCase {
    func testAudioThreadMakesNoAllocationOverThousandsOfPeriods() throws {
        // Unoptimized code looks generic metadata up on first use at each call site, which
        // allocates once; the product is built optimized. scripts/test runs this test with
        // `swift test -c release`.
        try XCTSkipIf(Self.isDebugBuild, "run in an optimized build: swift test -c release -Xswiftc -enable-testing")
        let directory = try makeTemporaryDirectory(self)
        // 3 x 8 s: about 4,800 periods of 5 ms, plus skips and seeks along the way.
        let paths = try (1...3).map { index -> String in
            let url = directory.appendingPathComponent("\(index).flac")
            try writeAudioFile(url, TestSignal.sweep(frames: 8 * 44_100, startHz: 100 * Double(index)))
            return url.path
        }
        EngineSession.audioThreadStartHook.withLock { hook in
            hook = { allocation_counter_watch_current_thread() }
        }
        defer { EngineSession.audioThreadStartHook.withLock { $0 = nil } }

        // `null` rather than `file`: ALSA's file plugin does its own file I/O on write.
        var configuration = AudioEngineConfiguration(deviceName: "null")
        configuration.sampleFormats = [.int16]
        configuration.underrunBehavior = .waitForData
        configuration.realtimePriority = nil
        let engine = AudioEngine(configuration: configuration)
        let recorder = EventRecorder(engine)
        engine.setQueue(AudioEntryList(paths: paths))
        allocation_counter_reset()
        try engine.prepare()
        // Creating the thread happens before the hook; everything counted is the loop's.
        try engine.play()
        usleep(20_000)
        engine.pause()
        usleep(5_000)
        engine.resume()
        engine.seek(toFrame: 44_100)
        usleep(20_000)
        engine.skipToNextEntry()
        usleep(20_000)
        engine.skipToPreviousEntry()
        recorder.waitForQueueFinished(timeout: 30)
        let allocations = allocation_counter_allocations()
        let frees = allocation_counter_frees()
        let played = engine.statistics
        engine.stop()

        XCTAssertEqual(allocations, 0, "allocations on the audio thread")
        XCTAssertEqual(frees, 0, "frees on the audio thread")
        let periods = recorder.events.count
        XCTAssertGreaterThan(periods, 0)
        _ = played
    }

    func testAudioThreadMakesNoAllocationThroughUnderrunsAndAnXrunRecovery() throws {
        try XCTSkipIf(Self.isDebugBuild, "run in an optimized build: swift test -c release -Xswiftc -enable-testing")
        let directory = try makeTemporaryDirectory(self)
        let url = directory.appendingPathComponent("sweep.flac")
        try writeAudioFile(url, TestSignal.sweep(frames: 30 * 44_100))
        EngineSession.audioThreadStartHook.withLock { hook in
            hook = { allocation_counter_watch_current_thread() }
        }
        defer { EngineSession.audioThreadStartHook.withLock { $0 = nil } }

        // A device without a clock that still gets silence when the decoder is late: the audio
        // thread outruns the decoder, so it inserts silence (underruns) again and again.
        var configuration = AudioEngineConfiguration(deviceName: "null")
        configuration.sampleFormats = [.int16]
        configuration.underrunBehavior = .insertSilence
        configuration.realtimePriority = nil
        let engine = AudioEngine(configuration: configuration)
        let recorder = EventRecorder(engine)
        engine.setQueue(AudioEntryList(paths: [url.path]))
        allocation_counter_reset()
        try engine.play()
        // Xruns while it plays: each recovered (snd_pcm_recover), refilled and restarted.
        for _ in 0..<400 where engine.statistics.xruns < 2 && engine.status == .playing {
            engine.simulateDeviceError(-EPIPE)
            usleep(250)
        }
        recorder.waitForQueueFinished(timeout: 30)
        let statistics = engine.statistics
        let allocations = allocation_counter_allocations()
        let frees = allocation_counter_frees()
        engine.stop()

        XCTAssertGreaterThan(statistics.underruns, 0, "silence was inserted")
        XCTAssertGreaterThanOrEqual(statistics.underrunSilenceFrames, statistics.underruns, "and counted in frames")
        XCTAssertGreaterThan(statistics.xruns, 0, "an xrun was recovered")
        XCTAssertEqual(allocations, 0, "allocations on the audio thread")
        XCTAssertEqual(frees, 0, "frees on the audio thread")
    }

    private static var isDebugBuild: Bool {
        #if DEBUG
        true
        #else
        false
        #endif
    }

    func testTheCounterSeesAllocationsOnAWatchedThread() {
        // The instrument itself: a watched thread that allocates is counted.
        allocation_counter_reset()
        let thread = PlatformThread(name: "test-alloc") {
            allocation_counter_watch_current_thread()
            let array = [Int](repeating: 1, count: Int.random(in: 100...200))
            XCTAssertGreaterThan(array.count, 0)
        }
        thread.join()
        XCTAssertGreaterThanOrEqual(allocation_counter_allocations(), 1)
        XCTAssertGreaterThanOrEqual(allocation_counter_frees(), 1)
    }
}
