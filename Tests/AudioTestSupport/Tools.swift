import Foundation

/// Runs a client tool (mpc, playerctl, tmux, openssl) to its end: its exit code and output (stdout and stderr).
/// `whileRunning` runs after it started (to make the change it waits for).
@discardableResult
public func runTool(_ path: String, _ arguments: [String], environment: [String: String],
             whileRunning: (() throws -> Void)? = nil) throws -> (code: Int32, out: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.environment = environment.merging(["PATH": "/usr/bin:/bin"]) { mine, _ in mine }
    let out = Pipe()
    process.standardOutput = out
    process.standardError = out
    // Not waitUntilExit(): it spins the calling thread's run loop, which on a task's thread
    // hung once in a loop of these tests.
    let exited = DispatchSemaphore(value: 0)
    process.terminationHandler = { _ in exited.signal() }
    try process.run()
    try whileRunning?()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    exited.wait()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}
