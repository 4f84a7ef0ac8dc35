@testable import AudioEngine
import XCTest

/// What the engine asks the device for (`AudioEngineConfiguration.pcmRequest`).
final class EngineConfigurationTests: XCTestCase {
    /// The period is the power of two frames at or above its duration: PipeWire runs its whole
    /// graph at the largest power-of-two quantum within a stream's period, and the 221 frames of
    /// 5 ms at 44.1 kHz made it run at 128 (Benchmarks/RESULTS.md, "PipeWire's pulse server").
    /// The buffer keeps its duration.
    func testThePeriodIsThePowerOfTwoFramesAtOrAboveItsDuration() {
        let configuration = AudioEngineConfiguration(deviceName: "default")
        XCTAssertEqual(configuration.periodDuration, .milliseconds(5))
        XCTAssertEqual(configuration.pcmRequest(sampleRate: 44_100).periodSizeInFrames, 256)
        XCTAssertEqual(configuration.pcmRequest(sampleRate: 48_000).periodSizeInFrames, 256)
        XCTAssertEqual(configuration.pcmRequest(sampleRate: 96_000).periodSizeInFrames, 512)
        XCTAssertEqual(configuration.pcmRequest(sampleRate: 44_100).bufferSizeInFrames, 2_205)
        XCTAssertEqual(configuration.pcmRequest(sampleRate: 96_000).bufferSizeInFrames, 4_800)
    }

    func testPowerOfTwoAtLeastRoundsUpAndKeepsPowersOfTwo() {
        XCTAssertEqual([0, 1, 2, 3, 4, 5, 221, 255, 256, 257, 480].map(AudioEngineConfiguration.powerOfTwo(atLeast:)),
                       [1, 1, 2, 4, 4, 8, 256, 256, 256, 512, 512])
    }
}
