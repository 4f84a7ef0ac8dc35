import AudioTestSupport
import Foundation
import Glibc
@testable import MusicKitCore
@testable import MusicKitDaemon
import Synchronization
import XCTest

/// The daemon's connections are taken by threads already waiting in `accept`.
final class ConnectionAcceptorsTests: XCTestCase {
    private func listener() throws -> Int32 {
        let path = try makeTemporaryDirectory(self).appendingPathComponent("test.sock").path
        let listener = try SystemPlayerWire.listen(at: path)
        // Shut down, which ends the waiting threads, and never closed: a waiter that has not
        // started yet would accept on the next test's listener if it got the same number.
        addTeardownBlock { shutdown(listener, Int32(SHUT_RDWR)) }
        listeningPath = path
        return listener
    }
    private var listeningPath = ""

    /// Ten clients, none of them finished: each is served while the ones before it still are (a
    /// thread was waiting for it, or was started for it when the last waiting one took a
    /// connection); once they leave, about `spare` threads wait again (not the ten).
    func testEveryClientFindsAThreadWaitingWhileTheOthersAreStillServed() throws {
        let served = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let acceptors = ConnectionAcceptors(listener: try listener(), name: "test.acceptor", spare: 2, admit: { _ in true },
                                            serve: { descriptor in
            var byte: UInt8 = 0
            guard read(descriptor, &byte, 1) == 1 else { return }
            served.signal()
            release.wait()
        })
        acceptors.start()
        var clients: [Int32] = []
        defer { clients.forEach { close($0) } }
        for index in 0..<10 {
            let client = try SystemPlayerWire.connect(to: listeningPath)
            clients.append(client)
            var byte: UInt8 = 1
            XCTAssertEqual(write(client, &byte, 1), 1)
            XCTAssertEqual(served.wait(timeout: .now() + 5), .success, "client \(index) was not served while the others were")
        }
        for _ in clients { release.signal() }
        let deadline = Date().addingTimeInterval(5)
        while acceptors.waitingThreads < 2 && Date() < deadline { usleep(1_000) }
        XCTAssertGreaterThanOrEqual(acceptors.waitingThreads, 2, "fewer threads wait than the spare count")
        // The others end (threads started while none waited may still join: a few, not ten).
        XCTAssertLessThan(acceptors.waitingThreads, 10, "the threads that served all stayed")
    }

    /// A connection `admit` refuses is closed without being served.
    func testARefusedConnectionIsClosedUnserved() throws {
        let servedCount = Atomic<Int>(0)
        let acceptors = ConnectionAcceptors(listener: try listener(), name: "test.acceptor", admit: { _ in false },
                                            serve: { _ in servedCount.add(1, ordering: .relaxed) })
        acceptors.start()
        let client = try SystemPlayerWire.connect(to: listeningPath)
        defer { close(client) }
        var descriptor = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
        XCTAssertEqual(poll(&descriptor, 1, 5_000), 1, "the refused connection stayed open")
        var byte: UInt8 = 0
        XCTAssertEqual(read(client, &byte, 1), 0, "a refused peer should read the end of the stream")
        XCTAssertEqual(servedCount.load(ordering: .relaxed), 0)
    }
}
