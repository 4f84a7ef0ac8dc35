import PlatformSupport
@testable import AudioEngine
import AudioMeasurement
import Foundation
import Synchronization
import XCTest

/// The probe that the load benchmark runs beside the engine, to say how long the machine
/// stalled a real-time thread.
final class SchedulingLatencyProbeTests: XCTestCase {
    /// At most one wake-up per millisecond that passed (its deadlines are absolute), and not
    /// fewer than half of them: counted against the time the probe really ran, which a busy
    /// machine makes longer than the sleep asked for (202 wake-ups in a 0.2 s sleep, once).
    func testWakesOncePerMillisecond() {
        let began = monotonicNanoseconds()
        let probe = SchedulingLatencyProbe(realtimePriority: nil)
        Thread.sleep(forTimeInterval: 0.2)
        let result = probe.stop()
        let milliseconds = Int((monotonicNanoseconds() - began) / 1_000_000)
        XCTAssert((milliseconds / 2...milliseconds + 1).contains(result.wakeUps),
                  "\(result.wakeUps) wake-ups in \(milliseconds) ms")
        XCTAssertFalse(result.isRealtime)
    }

    /// Threads of a higher real-time priority hold every CPU for 40 ms: the probe cannot run
    /// meanwhile and must report a wake-up about that late. The 40 ms count from the moment the
    /// last of them runs at that priority (a busy machine may start them late: with a fixed
    /// start, a late one held its CPU too briefly, and the probe was never stalled).
    func testReportsAStallWhileEveryCPUIsTaken() throws {
        let probe = SchedulingLatencyProbe(realtimePriority: 10)
        let cpuCount = ProcessInfo.processInfo.activeProcessorCount
        let refused = Atomic<Int>(0)
        let arrived = Atomic<Int>(0)
        let allArrivedAt = Atomic<Int>(0)  // monotonic ns; 0 until the last hog runs
        let hogs = (0..<cpuCount).map { _ in
            PlatformThread(name: "cpu-hog") {
                let priority = PlatformThread.requestRealtimePriority(20)
                if !priority { refused.add(1, ordering: .relaxed) }
                if arrived.add(1, ordering: .acquiringAndReleasing).newValue == cpuCount {
                    allArrivedAt.store(Int(monotonicNanoseconds()), ordering: .releasing)
                }
                guard priority else { return }
                // The others get a second to arrive (a refused one arrives too), then 40 ms together.
                let giveUp = monotonicNanoseconds() + 1_000_000_000
                var since = 0
                while since == 0 && monotonicNanoseconds() < giveUp { since = allArrivedAt.load(ordering: .acquiring) }
                while since != 0 && Int(monotonicNanoseconds()) < since + 40_000_000 {}
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
