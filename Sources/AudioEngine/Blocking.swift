import Foundation
import Synchronization

/// Runs async work from synchronous code (a command's or a benchmark's) and waits for it.
/// Never call it from an async context or the main actor's executor: it blocks its thread.
/// The work begins on this thread (`Task.immediate`) and goes on here until it first suspends,
/// rather than on a thread of the pool that has to be woken for it while this one only
/// waits: `musickit play FILE`'s `player.play()` started ~0.18 ms sooner.
package func waitFor<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
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
