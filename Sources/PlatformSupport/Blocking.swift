import Foundation
import Synchronization

/// Runs async work from synchronous code (a command's or a benchmark's) and waits for it.
/// Never call it from an async context or the main actor's executor: it blocks its thread.
/// The work begins on this thread (`Task.immediate`) and goes on here until it first suspends,
/// rather than on a thread of the pool that has to be woken for it while this one only
/// waits: no hand-off between threads on the path to a command's first sound.
package func waitFor<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
    let thread = pthread_self()
    WaitingThreads.add(thread)
    defer { WaitingThreads.remove(thread) }
    let result = Mutex<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task.immediate {
        let value: Result<T, any Error>
        do { value = .success(try await work()) } catch { value = .failure(error) }
        result.withLock { $0 = value }
        done.signal()
    }
    done.wait()
    return try result.withLock { $0! }.get()
}

/// The threads blocked in `waitFor`. Async work that runs on one of them (before its first
/// suspension) may block as well: it holds no thread of the concurrency pool, only one that
/// waits for it anyway. Elsewhere, blocking work (opening a device) belongs on a thread of its
/// own, so that the pool's few threads (one per CPU) and the main actor go on.
package enum WaitingThreads {
    private static let threads = Mutex<[pthread_t: Int]>([:])

    /// Whether the calling thread is blocked in `waitFor` for the work running on it.
    package static var includesCurrent: Bool {
        let thread = pthread_self()
        return threads.withLock { $0[thread] != nil }
    }

    fileprivate static func add(_ thread: pthread_t) {
        threads.withLock { $0[thread, default: 0] += 1 }
    }

    fileprivate static func remove(_ thread: pthread_t) {
        threads.withLock { threads in
            let count = (threads[thread] ?? 1) - 1
            threads[thread] = count > 0 ? count : nil
        }
    }
}

/// Per thread: when its blocking waits give up. A thread that opens a stream (the caller of
/// `play()`, the decoder thread) says when it has moved on — a `stop()`, a new request — and
/// the waits it may meet there look at least every 50 ms and give up once the check says so:
/// a download's next bytes (`GrowingFile`), a sound server's answer while the device opens
/// (`PulseConnection`). Without a check, they wait as long as the download or the server does.
package enum AbandonableWaits {
    private static let checks = Mutex<[pthread_t: @Sendable () -> Bool]>([:])

    /// From now on, waits on this thread give up once `check` returns true; until `clear()`.
    package static func giveUp(onThisThreadWhen check: @escaping @Sendable () -> Bool) {
        let thread = pthread_self()
        checks.withLock { $0[thread] = check }
    }

    /// This thread's waits wait for as long as what they wait for takes, again.
    package static func clear() {
        let thread = pthread_self()
        _ = checks.withLock { $0.removeValue(forKey: thread) }
    }

    /// This thread's check, nil when it has none.
    package static var checkOnThisThread: (@Sendable () -> Bool)? {
        let thread = pthread_self()
        return checks.withLock { $0[thread] }
    }
}
