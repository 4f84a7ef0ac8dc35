import Foundation
import Glibc

/// A Unix socket that accepts connections and never says a word.
public final class SilentUnixServer: @unchecked Sendable {
    // @unchecked: `accepted` is behind `condition`; the descriptor is set in init.
    public let path: String
    private let descriptor: Int32
    private let condition = NSCondition()
    private var accepted: [Int32] = []

    public init(path: String) throws {
        self.path = path
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            _ = path.utf8CString.withUnsafeBytes { bytes.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0.prefix(bytes.count - 1))) }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(descriptor, 8) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
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
