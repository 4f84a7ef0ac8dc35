import AudioMeasurement
import XCTest

/// What a failed comparison with the track says about its first difference: frames lost,
/// frames inserted, or frames altered in place (the load benchmark prints it).
final class StartCheckTests: XCTestCase {
    /// Interleaved stereo frames that do not repeat within the test's lengths (a linear
    /// congruential sequence), as a sweep does not over a few seconds.
    private static let track: [Int16] = {
        var state: UInt32 = 12_345
        return (0..<20_000).map { _ in
            state = state &* 1_664_525 &+ 1_013_904_223
            return Int16(truncatingIfNeeded: state >> 16) | 1  // never 0: silence is not the track
        }
    }()

    private func firstDifference(_ heard: [Int16]) -> (frame: Int, trackOffset: Int?)? {
        MonitorRecorder.firstDifference(heard, Self.track, trackFrame: 0, count: heard.count / 2 - 64, windowFrames: 2_000)
    }

    func testFramesLostAreCountedFromWhereTheHeardAudioFollowsTheTrackAgain() throws {
        let heard = Array(Self.track[0..<2_000]) + Array(Self.track[2_600...])  // 300 frames lost at frame 1,000
        let difference = try XCTUnwrap(firstDifference(heard))
        XCTAssertEqual(difference.frame, 1_000)
        XCTAssertEqual(difference.trackOffset, 300)
    }

    func testInsertedSilenceIsCountedAsFramesInserted() {
        let heard = Array(Self.track[0..<2_000]) + [Int16](repeating: 0, count: 400) + Array(Self.track[2_000...])
        let difference = firstDifference(heard)
        XCTAssertEqual(difference?.frame, 1_000)
        XCTAssertEqual(difference?.trackOffset, -200)
    }

    func testAFrameAlteredInPlaceLeavesTheAudioInStep() {
        var heard = Self.track
        heard[3_000] = heard[3_000] &+ 1  // frame 1,500, left channel
        let difference = firstDifference(heard)
        XCTAssertEqual(difference?.frame, 1_500)
        XCTAssertEqual(difference?.trackOffset, 0)
    }

    func testTheTrackHeardWholeHasNoDifference() {
        XCTAssertNil(firstDifference(Self.track))
    }

    func testAudioThatNeverFollowsTheTrackAgainSaysSo() {
        let heard = Array(Self.track[0..<2_000]) + [Int16](repeating: 7, count: Self.track.count - 2_000)
        let difference = firstDifference(heard)
        XCTAssertEqual(difference?.frame, 1_000)
        XCTAssertNotNil(difference)
        XCTAssertNil(difference?.trackOffset)
    }
}
