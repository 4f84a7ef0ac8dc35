import Foundation
import Glibc
import MusicKitCore

/// A Unix socket that accepts connections and never says a word.
public final class SilentUnixServer: @unchecked Sendable {
    // @unchecked: `accepted` is behind `condition`; the descriptor is set in init.
    public let path: String
    private let descriptor: Int32
    private let condition = NSCondition()
    private var accepted: [Int32] = []

    public init(path: String) throws {
        self.path = path
        descriptor = try SystemPlayerWire.listen(at: path)
        let listener = descriptor
        Thread.detachNewThread { [self] in
            while true {
                let client = accept(listener, nil, nil)
                if client < 0 { return }  // closed
                condition.lock()
                accepted.append(client)
                condition.broadcast()
                condition.unlock()
            }
        }
    }

    /// Connections accepted so far.
    public var connectionCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return accepted.count
    }

    /// Waits until more than `count` connections were accepted.
    public func waitForConnection(beyond count: Int = 0, timeout: TimeInterval) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while accepted.count <= count { if !condition.wait(until: deadline) { return accepted.count > count } }
        return true
    }

    public func close() {
        shutdown(descriptor, Int32(SHUT_RDWR))
        Glibc.close(descriptor)
        condition.lock()
        accepted.forEach { _ = Glibc.close($0) }
        accepted = []
        condition.unlock()
    }
}
