import AudioEngine
import Foundation

/// What was heard around a start — `play()`, a skip, a seek, a resume — at the monitor: the
/// checks that keep a timing honest. Time alone lies: a start looks fast when its first
/// frames were lost or played early, so every timing comes with what was heard.
public struct StartCheck: Sendable, CustomStringConvertible {
    /// Milliseconds from the call to the arrival of the first non-silent frame; nil when no
    /// sound came.
    public let milliseconds: Double?
    /// Non-silent frames that arrived at the monitor after the run began and before the
    /// call (anything but exact digital silence counts). Must be 0.
    public let framesHeardBeforeCall: Int
    /// Where in the track the heard audio begins, counted from the frame that should have
    /// been heard first (0: from exactly there); nil when the heard audio is not the track.
    public let landingFrame: Int?
    /// Frames compared bit for bit with the track from the landing frame on, and how many of
    /// them differed (dropped, repeated or altered frames: glitches).
    public let comparedFrames: Int
    public let mismatchedFrames: Int
    /// The track frame the heard audio begins at, searched in the whole track (diagnostics:
    /// a start at the wrong place); nil when the heard audio is not in the track.
    public var heardTrackFrame: Int? = nil
    /// When frames differed: the first that did (frames after the landing), and how far the
    /// heard audio is from the track once it is in step with it again — positive, frames were
    /// lost; negative, frames were inserted (silence, repeats); 0, frames were altered in place;
    /// nil when it is not in step again within two seconds.
    public var firstDifference: (frame: Int, trackOffset: Int?)? = nil

    /// Whether the start is intact: nothing before the call, the track from its expected
    /// frame (within `landingFloor` frames the monitor cannot see), and no glitch after.
    public func isIntact(landingFloor: Int, minimumComparedFrames: Int = 1) -> Bool {
        guard milliseconds != nil, framesHeardBeforeCall == 0, let landingFrame else { return false }
        return landingFrame >= 0 && landingFrame <= landingFloor && mismatchedFrames == 0
            && comparedFrames >= minimumComparedFrames
    }

    public var description: String {
        let time = milliseconds.map { String(format: "%.2f ms", $0) } ?? "no sound"
        let landing = landingFrame.map { "from track frame +\($0)" }
            ?? heardTrackFrame.map { "from track frame \($0), not the expected one" } ?? "not the track"
        return "\(time), \(framesHeardBeforeCall) frames heard before the call, \(landing), "
            + "\(mismatchedFrames) of \(comparedFrames) frames after it differ"
            + (firstDifferenceDescription.map { " (\($0))" } ?? "")
    }

    /// "the first at frame N: K frames lost" and the like; nil when none differed.
    public var firstDifferenceDescription: String? {
        guard let (frame, offset) = firstDifference else { return nil }
        let what = switch offset {
        case nil: "not in step with the track again within two seconds"
        case 0?: "altered in place, in step after"
        case let lost? where lost > 0: "\(lost) frames lost, in step after"
        case let inserted?: "\(-inserted) frames inserted, in step after"
        }
        return "the first at frame \(frame) after the landing: \(what)"
    }
}

extension MonitorRecorder {
    /// Checks a start: `since` is when the run began (before `prepare`, say), `call` when
    /// the start was asked for (both CLOCK_MONOTONIC); `track` is the file's interleaved
    /// stereo S16 samples and `expectedFrame` the track frame that should be heard first.
    /// Waits for the first sound (up to `timeout` s) and then for `compareFrames` more.
    ///
    /// The first frames of new audio are often never seen at a PulseAudio monitor (the sink
    /// renders ahead and rewinds when a stream starts), so the landing is searched for up to
    /// `searchFrames` after the expected frame; compare it with a control (`paplay`).
    public func checkStart(since: UInt64, call: UInt64, track: [Int16], expectedFrame: Int = 0,
                           searchFrames: Int = 4_096, compareFrames: Int = 44_100,
                           timeout: Double = 2) -> StartCheck {
        var heardBefore = 0
        for chunk in chunks(arrivedAfter: since) where chunk.arrivalNanoseconds <= call {
            heardBefore += Self.nonSilentFrames(chunk.samples)
        }
        let deadline = monotonicNanoseconds() + UInt64(timeout * 1e9)
        var first: (arrival: UInt64, frame: Int)?
        var checked = call
        while first == nil && monotonicNanoseconds() < deadline {
            for chunk in chunks(arrivedAfter: checked) {
                checked = chunk.arrivalNanoseconds
                if let index = chunk.samples.firstIndex(where: { $0 != 0 }) {
                    first = (chunk.arrivalNanoseconds, chunk.firstFrame + index / 2)
                    break
                }
            }
            if first == nil { usleep(200) }
        }
        guard let first else {
            return StartCheck(milliseconds: nil, framesHeardBeforeCall: heardBefore, landingFrame: nil,
                              comparedFrames: 0, mismatchedFrames: 0)
        }
        let milliseconds = Double(Int64(bitPattern: first.arrival &- call)) / 1e6
        // Wait for the frames to compare (or the end of the track), then read them.
        let wanted = min(compareFrames + searchFrames / 4, max(0, track.count / 2 - expectedFrame))
        let waitUntil = monotonicNanoseconds() + UInt64((Double(wanted) / Double(sampleRate) + 0.5) * 1e9)
        var heard: [Int16] = []
        while true {
            heard = samples(fromFrame: first.frame, arrivedAfter: call)
            if heard.count / 2 >= wanted || monotonicNanoseconds() > waitUntil { break }
            usleep(5_000)
        }
        guard let start = Self.locate(heard, in: track, from: expectedFrame, searchFrames: searchFrames) else {
            return StartCheck(milliseconds: milliseconds, framesHeardBeforeCall: heardBefore, landingFrame: nil,
                              comparedFrames: 0, mismatchedFrames: 0,
                              heardTrackFrame: Self.locate(heard, in: track, from: 0, searchFrames: track.count / 2))
        }
        let compared = max(0, min(compareFrames, heard.count / 2, track.count / 2 - start))
        var check = StartCheck(milliseconds: milliseconds, framesHeardBeforeCall: heardBefore,
                               landingFrame: start - expectedFrame, comparedFrames: compared,
                               mismatchedFrames: Self.differingFrames(heard, from: 0, track, from: start, count: compared),
                               heardTrackFrame: start)
        if check.mismatchedFrames > 0 {
            check.firstDifference = Self.firstDifference(heard, track, trackFrame: start, count: compared,
                                                         windowFrames: sampleRate)
        }
        return check
    }

    /// The first of `count` frames of `heard` that differs from `track` from `trackFrame`, and
    /// the offset at which `heard` follows the track again: the first heard frame within two
    /// windows after it whose next 32 frames are the track's, from a window before to two
    /// after where they should be.
    public static func firstDifference(_ heard: [Int16], _ track: [Int16], trackFrame: Int, count: Int,
                                windowFrames: Int) -> (frame: Int, trackOffset: Int?)? {
        guard let first = (0..<count).first(where: { frameDiffers(heard, $0, track, trackFrame + $0) }) else { return nil }
        let probeFrames = 32
        var frame = first
        while frame + probeFrames <= min(heard.count / 2, first + 2 * windowFrames) {
            let probe = Array(heard[(frame * 2)..<((frame + probeFrames) * 2)])
            let expected = trackFrame + frame
            if probe.contains(where: { $0 != 0 }),
               let found = locate(probe, in: track, from: max(0, expected - windowFrames), searchFrames: 3 * windowFrames) {
                return (first, found - expected)
            }
            frame += probeFrames
        }
        return (first, nil)
    }

    /// The recorded samples from recording frame `frame` on, from the chunks that arrived
    /// after `nanoseconds`.
    func samples(fromFrame frame: Int, arrivedAfter nanoseconds: UInt64) -> [Int16] {
        var result: [Int16] = []
        for chunk in chunks(arrivedAfter: nanoseconds) {
            let chunkFrames = chunk.samples.count / 2
            if chunk.firstFrame + chunkFrames <= frame { continue }
            let skip = max(0, frame - chunk.firstFrame)
            result += chunk.samples[(skip * 2)...]
        }
        return result
    }

    /// Stereo frames among `count` that differ between `heard` from `heardFrame` and `track`
    /// from `trackFrame`.
    static func differingFrames(_ heard: [Int16], from heardFrame: Int, _ track: [Int16], from trackFrame: Int,
                                count: Int) -> Int {
        var differing = 0
        for frame in 0..<count where frameDiffers(heard, heardFrame + frame, track, trackFrame + frame) {
            differing += 1
        }
        return differing
    }

    /// Whether stereo frame `heardFrame` of `heard` differs from frame `trackFrame` of `track`.
    @inline(__always)
    static func frameDiffers(_ heard: [Int16], _ heardFrame: Int, _ track: [Int16], _ trackFrame: Int) -> Bool {
        heard[heardFrame * 2] != track[trackFrame * 2] || heard[heardFrame * 2 + 1] != track[trackFrame * 2 + 1]
    }

    static func nonSilentFrames(_ samples: [Int16]) -> Int {
        var count = 0
        var index = 0
        while index + 1 < samples.count {
            if samples[index] != 0 || samples[index + 1] != 0 { count += 1 }
            index += 2
        }
        return count
    }

    /// The track frame at or after `from` (within `searchFrames`) where `heard` begins: its
    /// first 32 frames (fewer if it is shorter) match bit for bit.
    static func locate(_ heard: [Int16], in track: [Int16], from: Int, searchFrames: Int) -> Int? {
        let probe = min(32, heard.count / 2)
        guard probe > 0 else { return nil }
        let last = min(from + searchFrames, track.count / 2 - probe)
        guard from <= last else { return nil }
        for candidate in from...last where !frameDiffers(heard, 0, track, candidate) {
            if !(1..<probe).contains(where: { frameDiffers(heard, $0, track, candidate + $0) }) { return candidate }
        }
        return nil
    }
}

extension MonitorRecorder {
    /// Frames of one block of the sink, as the recorder's latency request sets it: new audio
    /// can start that far into a block already sent to the monitor, so up to this many of its
    /// first frames may never be seen there.
    public var blockFrames: Int { (latencyMilliseconds * sampleRate + 999) / 1_000 }

    /// Checks a switch from one sound to another (a skip while something is heard): where,
    /// after `call`, `track` is first heard from `expectedFrame` (within `searchFrames`), and
    /// whether the next `compareFrames` are the track bit for bit — the old audio still mixed
    /// in, or frames lost, would differ. `framesHeardBeforeCall` is not measured (0).
    public func checkSwitch(call: UInt64, track: [Int16], expectedFrame: Int = 0, searchFrames: Int = 1_024,
                            compareFrames: Int = 44_100, timeout: Double = 2) -> StartCheck {
        let lookFrames = Int(0.3 * Double(sampleRate))
        let deadline = monotonicNanoseconds() + UInt64((timeout + Double(compareFrames) / Double(sampleRate)) * 1e9)
        var arrived: [Chunk] = []
        while monotonicNanoseconds() < deadline {
            arrived = chunks(arrivedAfter: call)
            if arrived.reduce(0, { $0 + $1.samples.count / 2 }) >= lookFrames + compareFrames { break }
            usleep(5_000)
        }
        let heard = arrived.flatMap(\.samples)
        // Track frames in the window, by their first sample pair.
        var candidates: [Int32: [Int]] = [:]
        let last = min(expectedFrame + searchFrames, track.count / 2 - 32)
        if expectedFrame <= last {
            for frame in expectedFrame...last {
                candidates[Int32(track[frame * 2]) << 16 | Int32(UInt16(bitPattern: track[frame * 2 + 1])), default: []].append(frame)
            }
        }
        var found: (heardFrame: Int, trackFrame: Int)?
        var position = 0
        search: while position + 32 <= min(lookFrames, heard.count / 2 - 32) {
            let key = Int32(heard[position * 2]) << 16 | Int32(UInt16(bitPattern: heard[position * 2 + 1]))
            for candidate in candidates[key] ?? [] where
                Array(heard[(position * 2)..<((position + 32) * 2)]) == Array(track[(candidate * 2)..<((candidate + 32) * 2)]) {
                found = (position, candidate)
                break search
            }
            position += 1
        }
        guard let found else {
            return StartCheck(milliseconds: nil, framesHeardBeforeCall: 0, landingFrame: nil, comparedFrames: 0,
                              mismatchedFrames: 0)
        }
        var frameCount = 0
        var arrival = call
        for chunk in arrived {
            frameCount += chunk.samples.count / 2
            if frameCount > found.heardFrame { arrival = chunk.arrivalNanoseconds; break }
        }
        let compared = max(0, min(compareFrames, heard.count / 2 - found.heardFrame, track.count / 2 - found.trackFrame))
        return StartCheck(milliseconds: Double(Int64(bitPattern: arrival &- call)) / 1e6, framesHeardBeforeCall: 0,
                          landingFrame: found.trackFrame - expectedFrame, comparedFrames: compared,
                          mismatchedFrames: Self.differingFrames(heard, from: found.heardFrame, track, from: found.trackFrame,
                                                                 count: compared),
                          heardTrackFrame: found.trackFrame)
    }
}
