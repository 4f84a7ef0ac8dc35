@testable import AudioEngine
import AudioMeasurement
import Foundation
import Synchronization
import XCTest

/// The probe that the load benchmark runs beside the engine, to say how long the machine
/// stalled a real-time thread.
final class SchedulingLatencyProbeTests: XCTestCase {
    func testWakesOncePerMillisecond() {
        let probe = SchedulingLatencyProbe(realtimePriority: nil)
        Thread.sleep(forTimeInterval: 0.2)
        let result = probe.stop()
        XCTAssert((100...201).contains(result.wakeUps), "\(result.wakeUps) wake-ups in 0.2 s")
        XCTAssertFalse(result.isRealtime)
    }

    /// Threads of a higher real-time priority hold every CPU for 40 ms: the probe cannot run
    /// meanwhile and must report a wake-up about that late.
    func testReportsAStallWhileEveryCPUIsTaken() throws {
        let probe = SchedulingLatencyProbe(realtimePriority: 10)
        let cpuCount = ProcessInfo.processInfo.activeProcessorCount
        let start = monotonicNanoseconds() + 20_000_000
        let refused = Atomic<Int>(0)
        let hogs = (0..<cpuCount).map { _ in
            EngineThread(name: "cpu-hog") {
                if !EngineThread.requestRealtimePriority(20) { refused.add(1, ordering: .relaxed); return }
                while monotonicNanoseconds() < start {}
                while monotonicNanoseconds() < start + 40_000_000 {}
            }
        }
        for hog in hogs { hog.join() }
        Thread.sleep(forTimeInterval: 0.01)
        let result = probe.stop()
        try XCTSkipIf(refused.load(ordering: .relaxed) > 0 || !result.isRealtime, "SCHED_FIFO refused here")
        XCTAssertGreaterThanOrEqual(result.worstLatenessInMicroseconds, 25_000, "\(result)")
        XCTAssertGreaterThanOrEqual(result.wakeUpsLateBy10MillisecondsOrMore, 1)
        XCTAssert(SchedulingLatencyProbe.describe(result).contains("(SCHED_FIFO)"))
    }
}
