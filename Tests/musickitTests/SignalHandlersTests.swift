@testable import musickit
import Foundation
import Glibc
import XCTest

/// `musickit play`'s signals: one that comes while the tool starts, before its handlers are set up.
final class SignalHandlersTests: XCTestCase {
    /// SIGUSR2 ends a process by default: had it not been noted, this test's process would end
    /// at `raise`. Noted, it does nothing until its handler is set up, which then runs, once.
    func testASignalBeforeItsHandlerIsHandledOnceTheHandlerIsSetUp() {
        SignalHandlers.noteUntilHandled([SIGUSR2])
        XCTAssertEqual(raise(SIGUSR2), 0)
        let handled = expectation(description: "the handler ran for the signal that came before it")
        handled.assertForOverFulfill = true
        let handlers = SignalHandlers()
        handlers.on(SIGUSR2) { handled.fulfill() }
        wait(for: [handled], timeout: 10)
        // Long enough for a second run, had the signal been handled twice.
        usleep(100_000)
        withExtendedLifetime(handlers) {}
    }
}
