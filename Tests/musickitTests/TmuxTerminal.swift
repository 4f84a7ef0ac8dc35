import AudioMeasurement
import AudioTestSupport
import Foundation
@testable import MusicKitCore
import XCTest

/// A real terminal for the screens' tests: a tmux server of its own (its own socket name) with
/// one window, typed into with `send-keys` and read with `capture-pane`; stopped with
/// `kill-server` on that socket.
final class TmuxTerminal {
    let socketName = "musickit-test-\(getpid())-\(UUID().uuidString.prefix(8))"

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Starts `command` (run by the shell) in a `columns`×`rows` window.
    init(_ command: String, columns: Int = 100, rows: Int = 30) throws {
        // Not through a pipe: the server tmux starts would hold it open, and reading it would
        // wait for the server to end.
        let client = try spawnProcess(["/usr/bin/tmux", "-L", socketName, "-f", "/dev/null", "new-session", "-d",
                                       "-x", String(columns), "-y", String(rows), command],
                                      environment: ProcessInfo.processInfo.environment, outputPath: "/dev/null",
                                      newSession: false).get()
        var status: Int32 = 0
        waitpid(client, &status, 0)
        guard status == 0 else { throw Failure(description: "tmux new-session exited with \(status)") }
    }

    deinit { stop() }

    func stop() {
        _ = try? runTool("/usr/bin/tmux", ["-L", socketName, "kill-server"], environment: ProcessInfo.processInfo.environment)
    }

    /// Runs a tmux command on this server; throws with tmux's message when it fails.
    @discardableResult
    func tmux(_ arguments: [String]) throws -> String {
        let result = try runTool("/usr/bin/tmux", ["-L", socketName, "-f", "/dev/null"] + arguments,
                                 environment: ProcessInfo.processInfo.environment)
        guard result.code == 0 else { throw Failure(description: "tmux \(arguments.first ?? ""): \(result.out)") }
        return result.out
    }

    /// Types `keys` (tmux key names: "Enter", "Escape", "Down", "Tab", or text).
    func type(_ keys: String...) throws {
        try tmux(["send-keys", "-t", "0"] + keys)
    }

    /// What the window shows (with its escape sequences when `escapes`).
    func screen(escapes: Bool = false) throws -> String {
        try tmux(["capture-pane", "-p", "-t", "0"] + (escapes ? ["-e"] : []))
    }

    /// "alternate_on cursor_flag", e.g. "0 1" for the main screen with the cursor shown.
    func modes() throws -> String {
        try tmux(["display-message", "-p", "-t", "0", "#{alternate_on} #{cursor_flag}"]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Waits (up to 10 s) until the screen satisfies `condition`; returns it.
    @discardableResult
    func waitForScreen(_ what: String, file: StaticString = #filePath, line: UInt = #line,
                       _ condition: (String) -> Bool) throws -> String {
        let deadline = Date().addingTimeInterval(10)
        var last = ""
        while Date() < deadline {
            last = try screen()
            if condition(last) { return last }
            usleep(20_000)
        }
        XCTFail("the screen never showed \(what); it shows:\n\(last)", file: file, line: line)
        return last
    }
}

/// `arguments` quoted for the shell.
func shellQuoted(_ arguments: [String]) -> String {
    arguments.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
}

/// A test of a screen in a real terminal: skipped without tmux; a temporary folder of its own;
/// its terminal stopped at the end.
class TerminalTestCase: XCTestCase {
    var directory: URL!
    var terminal: TmuxTerminal?

    override func setUpWithError() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux") else {
            throw XCTSkip("tmux is not installed (scripts/setup-system installs it)")
        }
        directory = try makeTemporaryDirectory(self)
    }

    override func tearDown() {
        terminal?.stop()
    }

    /// The test's own folders for musickit.
    var folders: [String: String] {
        ["MUSICKIT_CONFIG_DIR": directory.appendingPathComponent("config").path,
         "MUSICKIT_DATA_DIR": directory.appendingPathComponent("data").path,
         "MUSICKIT_RUNTIME_DIR": directory.appendingPathComponent("runtime").path]
    }
}
