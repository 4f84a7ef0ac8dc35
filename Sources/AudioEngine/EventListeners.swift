import Foundation
import Synchronization

/// Who hears an object's events: async streams (`stream()`) and handlers called in order on
/// the thread that emits (`add(_:)`). The engine and the players each keep one.
///
/// Thread safety: any thread. `emit` calls handlers outside the lock, so a handler may add or
/// remove listeners, or emit again.
package final class EventListeners<Event: Sendable>: Sendable {
    /// Names a handler added with `add(_:)`, to remove it.
    package struct ID: Hashable, Sendable {
        fileprivate let rawValue: UInt64
    }

    private struct Registry {
        var nextID: UInt64 = 1
        var handlers: [(ID, @Sendable (Event) -> Void)] = []
        var continuations: [ID: AsyncStream<Event>.Continuation] = [:]

        mutating func newID() -> ID {
            defer { nextID += 1 }
            return ID(rawValue: nextID)
        }
    }

    private let registry = Mutex(Registry())

    package init() {}

    /// The events from now on, buffered until they are read; the stream ends its listening when
    /// it is dropped or cancelled.
    package func stream() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream<Event>.makeStream()
        let id = registry.withLock { registry in
            let id = registry.newID()
            registry.continuations[id] = continuation
            return id
        }
        continuation.onTermination = { [weak self] _ in
            self?.registry.withLock { _ = $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Calls `handler` with every event from now on, in the order they are emitted.
    @discardableResult
    package func add(_ handler: @escaping @Sendable (Event) -> Void) -> ID {
        registry.withLock { registry in
            let id = registry.newID()
            registry.handlers.append((id, handler))
            return id
        }
    }

    package func remove(_ id: ID) {
        registry.withLock { registry in
            registry.handlers.removeAll { $0.0 == id }
            registry.continuations.removeValue(forKey: id)?.finish()
        }
    }

    /// Gives `event` to the handlers (in the order they were added), then to the streams.
    package func emit(_ event: Event) {
        let (handlers, continuations) = registry.withLock { ($0.handlers.map(\.1), Array($0.continuations.values)) }
        for handler in handlers { handler(event) }
        for continuation in continuations { continuation.yield(event) }
    }
}
