import Glibc
@testable import MusicKitTerminal
import XCTest

/// The full-screen terminal's process-wide effects (issue #43): its fatal-signal handlers, which
/// put the terminal back on a crash, are in place only while a screen is shown.
final class TerminalScreenTests: XCTestCase {
    private func handlerAddress(_ number: Int32) -> Int {
        var current = sigaction()
        sigaction(number, nil, &current)
        return unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self)
    }

    /// An app that shows the music picker keeps its own crash handlers: the screen takes them
    /// over while it is shown and gives them back when it is left.
    func testTheFatalSignalHandlersAreTheScreensOnlyWhileItIsShown() throws {
        var ignore = sigaction()
        ignore.__sigaction_handler.sa_handler = SIG_IGN
        var before = sigaction()
        sigaction(SIGTRAP, &ignore, &before)
        defer { sigaction(SIGTRAP, &before, nil) }
        let appsHandler = handlerAddress(SIGTRAP)
        let null = open("/dev/null", O_WRONLY)
        defer { close(null) }

        let screen = TerminalScreen(input: null, output: null)
        screen.enter(rawKeys: false)
        XCTAssertNotEqual(handlerAddress(SIGTRAP), appsHandler, "while shown, a crash restores the terminal first")
        screen.leave()
        XCTAssertEqual(handlerAddress(SIGTRAP), appsHandler, "the app's handler is back once the screen is left")

        screen.enter(rawKeys: false)
        screen.leave()
        XCTAssertEqual(handlerAddress(SIGTRAP), appsHandler, "and again after a second screen")
    }
}
