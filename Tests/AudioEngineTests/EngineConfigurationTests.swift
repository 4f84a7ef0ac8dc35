@testable import AudioEngine
import XCTest

/// What the engine asks the device for (`AudioEngineConfiguration.pcmRequest`).
final class EngineConfigurationTests: XCTestCase {
    /// Times and frame counts from people, clients and files become Ints without trapping.
    func testTimesBecomeFramesWithoutTrappingOnAnyDouble() {
        XCTAssertEqual(Double.nan.clampedInt(), 0)
        XCTAssertEqual(Double.infinity.clampedInt(), Double.largestClampedInt)
        XCTAssertEqual((-Double.infinity).clampedInt(), -Double.largestClampedInt)
        XCTAssertEqual(1e300.clampedInt(), Double.largestClampedInt)
        XCTAssertEqual(2.5.clampedInt(), 3)
        XCTAssertEqual(2.9.clampedInt(.towardZero), 2)
        XCTAssertEqual(1.5.frames(at: 44_100), 66_150)
        XCTAssertEqual((-3.0).frames(at: 44_100), 0)
        XCTAssertEqual(Double.nan.frames(at: 44_100), 0)
        XCTAssertEqual(1e15.frames(at: 384_000), Double.largestClampedInt)
    }

    /// The device's period (the refill, when the audio thread wakes) is the power of two frames
    /// nearest to its duration: PipeWire runs its whole graph at the largest power-of-two quantum
    /// within a stream's period (221 frames made it run at 128: Benchmarks/RESULTS.md, "PipeWire's
    /// pulse server"). The buffer is deep and keeps its duration; what a start writes before it
    /// starts the device is the start buffer's duration.
    func testTheDeviceIsAskedForADeepBufferRefilledInPowerOfTwoPeriods() {
        let configuration = AudioEngineConfiguration(deviceName: "default")
        XCTAssertEqual(configuration.bufferDuration, .milliseconds(750))
        XCTAssertEqual(configuration.refillDuration, .milliseconds(180))
        XCTAssertEqual(configuration.pcmRequest(sampleRate: 44_100).periodSizeInFrames, 8_192)
        XCTAssertEqual(configuration.pcmRequest(sampleRate: 48_000).periodSizeInFrames, 8_192)
        XCTAssertEqual(configuration.pcmRequest(sampleRate: 96_000).periodSizeInFrames, 16_384)
        XCTAssertEqual(configuration.pcmRequest(sampleRate: 44_100).bufferSizeInFrames, 33_075)
        XCTAssertEqual(configuration.pcmRequest(sampleRate: 96_000).bufferSizeInFrames, 72_000)
        XCTAssertEqual(configuration.pcmRequest(sampleRate: 44_100).startThresholdInFrames, 2_205)
    }

    /// The engine renders and starts in periods of 5 ms, as the power of two frames at or above.
    func testTheRenderPeriodIsThePowerOfTwoFramesAtOrAboveItsDuration() {
        let configuration = AudioEngineConfiguration(deviceName: "default")
        XCTAssertEqual(configuration.periodDuration, .milliseconds(5))
        XCTAssertEqual(configuration.renderPeriodFrames(at: 44_100), 256)
        XCTAssertEqual(configuration.renderPeriodFrames(at: 48_000), 256)
        XCTAssertEqual(configuration.renderPeriodFrames(at: 96_000), 512)
    }

    /// A buffer shorter than two refills is made two refills long (ALSA needs two periods).
    func testTheBufferHoldsAtLeastTwoPeriods() {
        var configuration = AudioEngineConfiguration(deviceName: "default")
        configuration.bufferDuration = .milliseconds(50)
        XCTAssertEqual(configuration.pcmRequest(sampleRate: 44_100).bufferSizeInFrames, 16_384)
    }

    func testPowerOfTwoNearestRoundsToTheCloserOne() {
        XCTAssertEqual([0, 1, 2, 3, 5, 6, 7_938, 8_640, 12_288, 12_289, 17_280].map(AudioEngineConfiguration.powerOfTwo(nearest:)),
                       [1, 1, 2, 4, 4, 8, 8_192, 8_192, 16_384, 16_384, 8_192 * 2])
    }

    func testPowerOfTwoAtLeastRoundsUpAndKeepsPowersOfTwo() {
        XCTAssertEqual([0, 1, 2, 3, 4, 5, 221, 255, 256, 257, 480].map(AudioEngineConfiguration.powerOfTwo(atLeast:)),
                       [1, 1, 2, 4, 4, 8, 256, 256, 256, 512, 512])
    }
}
