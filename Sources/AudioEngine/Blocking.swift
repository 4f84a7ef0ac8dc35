import Foundation
import Synchronization

/// Runs async work from synchronous code (a command's or a benchmark's) and waits for it.
/// Never call it from an async context or the main actor's executor: it blocks its thread.
package func waitFor<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
    let result = Mutex<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        let value: Result<T, any Error>
        do { value = .success(try await work()) } catch { value = .failure(error) }
        result.withLock { $0 = value }
        done.signal()
    }
    done.wait()
    return try result.withLock { $0! }.get()
}
