@testable import musickit
import XCTest

/// What `musickit play` says about dropouts during an entry.
final class DropoutReportTests: XCTestCase {
    private typealias Dropouts = PlayerSession.Dropouts

    func testNothingIsSaidWhenNothingDroppedOut() {
        let start = Dropouts(underruns: 2, silenceFrames: 900, xruns: 1, sampleRate: 44_100)
        XCTAssertNil(Dropouts(underruns: 2, silenceFrames: 900, xruns: 1, sampleRate: 44_100).since(start))
    }

    func testUnderrunsAndXrunsSinceTheEntryStartedAreCountedWithTheSilence() {
        let start = Dropouts(underruns: 2, silenceFrames: 900, xruns: 1, sampleRate: 44_100)
        let now = Dropouts(underruns: 5, silenceFrames: 900 + 79_380, xruns: 2, sampleRate: 44_100)
        XCTAssertEqual(now.since(start), "3 underruns (1.8 s of silence), 1 xrun (the device ran dry and was restarted)")
    }
}
