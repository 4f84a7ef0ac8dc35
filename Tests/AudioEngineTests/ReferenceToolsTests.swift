import AudioMeasurement
import Foundation
import XCTest

/// The helpers the tests and the benchmarks share (Sources/AudioMeasurement/ReferenceTools.swift).
final class ReferenceToolsTests: XCTestCase {
    private func openDescriptorCount() throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count
    }

    /// A tool run to its end leaves no descriptor open: a test that polled `pactl` every 20 ms
    /// kept one pipe per run, ~130, and the test process held ~640 by its end.
    func testRunningAToolLeavesNoDescriptorOpen() throws {
        _ = try runTool("/bin/echo", ["warm-up"], environment: [:])  // Foundation's own first descriptors
        let before = try openDescriptorCount()
        for run in 0..<20 {
            let result = try runTool("/bin/echo", ["run \(run)"], environment: [:])
            XCTAssertEqual(result.out, "run \(run)\n")
        }
        XCTAssertLessThanOrEqual(try openDescriptorCount(), before + 2, "20 runs of a tool")
    }
}
