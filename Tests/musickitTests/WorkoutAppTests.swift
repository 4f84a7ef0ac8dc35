import AudioMeasurement
import AudioTestSupport
import Foundation
import XCTest

/// The workout example (`musickit-workout`) as a person uses it, in a real terminal (tmux): the
/// suggestion shelf from the catalog, the picker opened and cancelled, an artwork chosen starts
/// its song and the workout's stopwatch, the controls skip and pause, ending the workout goes
/// home, q quits.
final class WorkoutAppTests: TerminalTestCase {
    /// `musickit-workout`, built beside `musickit`.
    private var executable: String {
        CommandLineTests.executable.deletingLastPathComponent().appendingPathComponent("musickit-workout").path
    }

    func testTheShelfStartsASongAndTheWorkoutAndTheControlsWork() throws {
        let device = try AudioTestEnvironment.requirePulse()
        _ = try SharedMonitor.recorder()
        let environment = folders.merging(["MUSICKIT_AUDIO_DEVICE": device, "TERM": "xterm-256color", "NO_COLOR": "",
                                           "COLORTERM": "truecolor"]) { $1 }
        let full = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        XCTAssertEqual(try runTool(CommandLineTests.executable.path, ["authorize", "musickit-workout", "--allow"], environment: full).code, 0)
        XCTAssertEqual(try runTool(CommandLineTests.executable.path, ["account", "--subscription", "active"], environment: full).code, 0)
        let exports = environment.map { "\($0.key)='\($0.value)'" }.joined(separator: " ")
        let terminal = try TmuxTerminal("env \(exports) \(shellQuoted([executable])); echo AFTER-$?; sleep 60", columns: 100, rows: 40)
        self.terminal = terminal

        var shown = try terminal.waitForScreen("the home screen with the shelf") {
            $0.contains("Bike workout") && $0.contains("1 A New Journey") && $0.contains("2 Ezer Év")
        }
        XCTAssertTrue(shown.contains("s start workout"), shown)
        // The picker, opened and cancelled: the app's keys work again after it.
        try terminal.type("p")
        try terminal.waitForScreen("the picker") { $0.contains("Pick music") }
        try terminal.type("Escape")
        try terminal.waitForScreen("home again") { $0.contains("s start workout") && !$0.contains("Pick music") }
        try terminal.type("2")
        shown = try terminal.waitForScreen("the workout with the chosen song") { $0.contains("Ezer Év") && $0.contains("Playing") }
        XCTAssertTrue(shown.contains("Obsidian Shell"), "the subtitle: \(shown)")
        try terminal.waitForScreen("the stopwatch running") { $0.contains("00:01") || $0.contains("00:02") }
        try terminal.type("n")
        try terminal.waitForScreen("the next suggestion") { $0.contains("A New Journey") && !$0.contains("Ezer Év") }
        try terminal.type(" ")
        try terminal.waitForScreen("paused") { $0.contains("Paused") }
        try terminal.type("e")
        try terminal.waitForScreen("home again") { $0.contains("Workout ended.") }
        try terminal.type("q")
        shown = try terminal.waitForScreen("the shell") { $0.contains("AFTER-") }
        XCTAssertTrue(shown.contains("AFTER-0"), shown)
        XCTAssertEqual(try terminal.modes(), "0 1", "the terminal given back")
    }
}
