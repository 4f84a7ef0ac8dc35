@testable import AudioEngine
import XCTest

/// The heard position as readers see it between the audio thread's wakes.
final class EngineSharedStateTests: XCTestCase {
    /// A playing position is counted on by the wall clock, never past the next change; a paused
    /// one, and any read for an output without a real-time clock (sample rate 0), is exactly
    /// what was published.
    func testAPlayingPositionIsCountedOnUpToItsLimitAndOtherwiseReadAsPublished() {
        let shared = EngineSharedState()
        let stamp: UInt64 = 1_000_000_000
        shared.publishPosition(token: 7, frame: 22_050, playedFrames: 22_050, advanceLimitFrames: 4_410, at: stamp)
        let tenMillisecondsLater = stamp + 10_000_000
        XCTAssertEqual(shared.readPosition(now: tenMillisecondsLater, sampleRate: 44_100).frame, 22_491)
        XCTAssertEqual(shared.readPosition(now: stamp + 1_000_000_000, sampleRate: 44_100).frame, 22_050 + 4_410,
                       "never past the limit")
        XCTAssertEqual(shared.readPosition(now: tenMillisecondsLater, sampleRate: 0).frame, 22_050,
                       "an output on another clock: as published")
        XCTAssertEqual(shared.readPosition(now: tenMillisecondsLater, sampleRate: 44_100).token, 7)

        shared.publishPosition(token: 7, frame: 22_050, playedFrames: 22_050, advanceLimitFrames: 0, at: stamp)
        XCTAssertEqual(shared.readPosition(now: tenMillisecondsLater, sampleRate: 44_100).frame, 22_050, "paused")
    }
}
