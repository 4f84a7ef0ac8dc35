import PlatformSupport
import AudioEngine
import Glibc
import Synchronization

/// A thread at SCHED_FIFO (the audio thread's priority) that asks to wake every millisecond and
/// records how late it woke, as cyclictest does: what the machine, and in a VM its host, does
/// to a real-time thread. Beside an underrun count it says whether the buffer was shorter than
/// the stalls the machine imposed (a vCPU taken away by the host is a stall no priority inside
/// the guest prevents).
public final class SchedulingLatencyProbe: Sendable {
    public struct Result: Sendable, Equatable {
        public var wakeUps = 0
        public var worstLatenessInMicroseconds = 0
        /// Wake-ups at least 10 ms late.
        public var wakeUpsLateBy10MillisecondsOrMore = 0
        /// Whether SCHED_FIFO was granted; without it the figures include the time-sharing scheduler's.
        public var isRealtime = false
    }

    private final class State: Sendable {
        let stopping = Atomic<Bool>(false)
        let result = Mutex(Result())
    }

    private let state = State()
    private let thread: PlatformThread
    private static let intervalInNanoseconds = 1_000_000

    /// Starts the probe; `realtimePriority` nil runs it at the ordinary priority.
    public init(realtimePriority: Int32? = 70) {
        let state = self.state
        thread = PlatformThread(name: "latency-probe") {
            var result = Result()
            if let realtimePriority { result.isRealtime = PlatformThread.requestRealtimePriority(realtimePriority) }
            var deadline = timespec()
            clock_gettime(CLOCK_MONOTONIC, &deadline)
            while !state.stopping.load(ordering: .relaxed) {
                deadline.tv_nsec += Self.intervalInNanoseconds
                if deadline.tv_nsec >= 1_000_000_000 { deadline.tv_sec += 1; deadline.tv_nsec -= 1_000_000_000 }
                while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nil) == EINTR {}
                var now = timespec()
                clock_gettime(CLOCK_MONOTONIC, &now)
                let lateness = (now.tv_sec - deadline.tv_sec) * 1_000_000_000 + (now.tv_nsec - deadline.tv_nsec)
                result.wakeUps += 1
                result.worstLatenessInMicroseconds = max(result.worstLatenessInMicroseconds, lateness / 1_000)
                if lateness >= 10_000_000 { result.wakeUpsLateBy10MillisecondsOrMore += 1 }
            }
            state.result.withLock { $0 = result }
        }
    }

    /// Stops the probe and returns what it saw (call once).
    public func stop() -> Result {
        state.stopping.store(true, ordering: .relaxed)
        thread.join()
        return state.result.withLock { $0 }
    }

    deinit {
        if !state.stopping.load(ordering: .relaxed) { _ = stop() }
    }

    /// For a row's note: "worst wake-up 25.2 ms late, 1189 of 60000 ≥ 10 ms (SCHED_FIFO)".
    public static func describe(_ result: Result) -> String {
        let worst = Double(result.worstLatenessInMicroseconds) / 1_000
        return "a thread waking every 1 ms: worst wake-up \((worst * 10).rounded() / 10) ms late, "
            + "\(result.wakeUpsLateBy10MillisecondsOrMore) of \(result.wakeUps) at least 10 ms late"
            + (result.isRealtime ? " (SCHED_FIFO)" : " (not real-time: SCHED_FIFO refused)")
    }
}
