import AudioEngine
import AudioMeasurement
import AudioTestSupport
import Foundation
@testable import MusicKitCore
import XCTest

/// The talk's player code (WWDC 2026 session 254, 14:49–15:38) without SwiftUI: `@State`
/// becomes a stored property, each `Button` action a method. It must compile unchanged.
struct WorkoutPlayerView {
    let player = ApplicationMusicPlayer.shared
    var state = ApplicationMusicPlayer.shared.state
    var queue = ApplicationMusicPlayer.shared.queue

    var isPlaying: Bool {
        state.playbackStatus == .playing
    }

    /// 14:49: the artwork of what plays.
    var artwork: Artwork? {
        if let artwork = queue.currentEntry?.artwork {
            return artwork
        }
        return nil
    }

    /// 15:06: the title and subtitle of what plays.
    var info: (title: String, subtitle: String?)? {
        if let currentSong = queue.currentEntry {
            return (currentSong.title, currentSong.subtitle)
        }
        return nil
    }

    /// 15:14: the play/pause button.
    func playPause() {
        if isPlaying {
            player.pause()
        } else {
            Task {
                try await player.play()
            }
        }
    }

    /// 15:38: the back and next buttons.
    func back() {
        Task {
            try await player.skipToPreviousEntry()
        }
    }

    func next() {
        Task {
            try await player.skipToNextEntry()
        }
    }
}

/// The player against a sound server that consumes audio in real time (the PulseAudio null
/// sink of scripts/with-test-sink): transport, observation, edits while playing, seeking.
final class PlayerRealTimeTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        try useTemporaryEnvironment(self)
        try authorizeTestApp()
        directory = try makeTemporaryDirectory(self)
        _ = try SharedMonitor.recorder()
    }

    /// The shared player on the test sink, stopped after the test.
    private func sharedPlayer() throws -> ApplicationMusicPlayer {
        let player = ApplicationMusicPlayer.shared
        player.engineConfiguration = try AudioTestEnvironment.sinkConfiguration()
        player.state.repeatMode = MusicPlayer.RepeatMode.none
        player.state.shuffleMode = .off
        addTeardownBlock { player.stop() }
        return player
    }

    private func waitUntil(_ description: String, timeout: TimeInterval = 5, file: StaticString = #filePath,
                           line: UInt = #line, _ condition: () -> Bool) {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            if condition() { return }
            usleep(2_000)
        }
        XCTFail("not \(description) within \(timeout) s", file: file, line: line)
    }


    func testTheTalksControlsPlayPauseSkipAndGoBack() throws {
        let (songs, _) = try GeneratedSongs.tones([440, 550, 660], frames: 44_100 * 8, into: directory)
        let player = try sharedPlayer()
        let view = WorkoutPlayerView()
        let recorder = try SharedMonitor.recorder()
        player.queue = ApplicationMusicPlayer.Queue(for: songs)
        XCTAssertEqual(view.info?.title, "Tone 1", "the view's queue shows the queue set after it was made")
        XCTAssertFalse(view.isPlaying)

        let pressed = monotonicNanoseconds()
        view.playPause()
        waitUntil("playing") { view.isPlaying }
        XCTAssertNotNil(recorder.firstSound(after: pressed, timeout: 2), "heard after Play")
        XCTAssertEqual(view.info?.title, "Tone 1")
        XCTAssertEqual(view.info?.subtitle, "Test Artist")

        view.playPause()
        waitUntil("paused") { view.state.playbackStatus == .paused }
        let pausedAt = player.playbackTime
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(player.playbackTime, pausedAt, accuracy: 0.05, "paused: the position stays")
        view.playPause()
        waitUntil("playing again") { view.isPlaying }
        waitUntil("moving again") { player.playbackTime > pausedAt + 0.1 }

        view.next()
        waitUntil("on the second song") { view.info?.title == "Tone 2" }
        view.next()
        waitUntil("on the third song") { view.info?.title == "Tone 3" }
        view.back()
        waitUntil("back on the second song") { view.info?.title == "Tone 2" }

        // Past its first seconds, Back restarts the song.
        player.playbackTime = 5
        waitUntil("at 5 s") { player.playbackTime >= 5 }
        view.back()
        waitUntil("restarted") { player.playbackTime < 1 }
        XCTAssertEqual(view.info?.title, "Tone 2")
        XCTAssertTrue(view.isPlaying)
    }

    func testStatusAndCurrentEntryChangesAreObservedInOrder() async throws {
        let (songs, _) = try GeneratedSongs.tones([440, 550], frames: 22_050, into: directory)
        let player = try sharedPlayer()
        player.queue = ApplicationMusicPlayer.Queue(for: songs)
        let statuses = ObservedValues { player.state.playbackStatus }
        let titles = ObservedValues { player.queue.currentEntry?.title }
        let counts = ObservedValues { player.queue.entries.count }

        try await player.play()
        XCTAssertEqual(player.state.playbackStatus, .playing, "play() returns once the entry is heard")
        await statuses.wait(for: "playing") { $0.last == .playing }
        player.pause()
        await statuses.wait(for: "paused") { $0.last == .paused }
        try await player.play()
        await statuses.wait(for: "playing again") { $0.count == 4 }
        let extra = try GeneratedSongs.tones([770], frames: 22_050, into: directory, name: "Extra")
        try await player.queue.insert(extra.songs[0], position: .tail)
        await statuses.wait(for: "the end of the queue") { $0.last == .stopped && $0.count > 1 }
        await titles.wait(for: "back at the start") { $0.count == 4 }
        XCTAssertEqual(statuses.values, [.stopped, .playing, .paused, .playing, .stopped])
        XCTAssertEqual(titles.values, ["Tone 1", "Tone 2", "Extra 1", "Tone 1"],
                       "inserted at the tail: played, then back to the start")
        XCTAssertEqual(counts.values, [2, 3])
    }

    func testEditsWhilePlayingChangeWhatPlaysNext() async throws {
        let (songs, _) = try GeneratedSongs.tones([300, 400, 500, 600], frames: 44_100 * 10, into: directory)
        let player = try sharedPlayer()
        let log = PlayerEventLog(player)
        player.queue = ApplicationMusicPlayer.Queue(for: songs.prefix(2))
        try await player.play()

        // Inserted after the current entry: it plays next.
        try await player.queue.insert(songs[2], position: .afterCurrentEntry)
        try await player.skipToNextEntry()
        XCTAssertEqual(player.queue.currentEntry?.title, "Tone 3", "the inserted song")

        // Setting the current entry jumps there.
        player.queue.currentEntry = player.queue.entries[0]
        XCTAssertEqual(player.queue.currentEntry?.title, "Tone 1", "current at once")
        await eventually("back on the first") { log.startedTitles.count == 3 }

        // Removing what would come next: the one after it follows.
        player.queue.entries.remove(at: 1)
        try await player.skipToNextEntry()
        XCTAssertEqual(player.queue.currentEntry?.title, "Tone 2", "a skip returns once the next entry is heard")
        await eventually("the events of all four") { log.startedTitles.count == 4 }
        XCTAssertEqual(log.startedTitles, ["Tone 1", "Tone 3", "Tone 1", "Tone 2"])

        // A skip right after setting the current entry goes on from the entry set.
        player.queue.currentEntry = player.queue.entries[0]
        try await player.skipToNextEntry()
        await eventually("the entry after the one set") { log.startedTitles.count >= 5 && log.startedTitles.last == "Tone 2" }
    }

    func testSeekingMovesThroughTheEntryAndEnds() async throws {
        let (songs, _) = try GeneratedSongs.tones([440], frames: 44_100 * 20, into: directory)
        let player = try sharedPlayer()
        player.queue = ApplicationMusicPlayer.Queue(for: songs)
        try await player.play()
        player.beginSeekingForward()
        XCTAssertEqual(player.state.playbackStatus, .seekingForward)
        XCTAssertEqual(player.state.playbackRate, 4)
        try await Task.sleep(for: .milliseconds(1_100))
        let forward = player.playbackTime
        XCTAssertGreaterThan(forward, 3, "about 4 s of the song in 1 s")
        player.endSeeking()
        XCTAssertEqual(player.state.playbackStatus, .playing)
        XCTAssertEqual(player.state.playbackRate, 1)

        player.beginSeekingBackward()
        XCTAssertEqual(player.state.playbackStatus, .seekingBackward)
        try await Task.sleep(for: .milliseconds(600))
        player.endSeeking()
        await eventually("moved back") { player.playbackTime < forward - 1 }

        player.state.playbackRate = 0
        XCTAssertEqual(player.state.playbackStatus, .paused)
        player.state.playbackRate = 1
        XCTAssertEqual(player.state.playbackStatus, .playing)
    }

    /// `playbackTime` is the seek's target as soon as it is set — paused (where the engine has
    /// nothing to play it from until resumed) or playing — never the old position meanwhile.
    func testASeekIsTheReportedTimeAtOnce() async throws {
        let (songs, _) = try GeneratedSongs.tones([440], frames: 44_100 * 20, into: directory)
        let player = try sharedPlayer()
        player.queue = ApplicationMusicPlayer.Queue(for: songs)
        try await player.play()
        player.pause()
        player.playbackTime = 7
        XCTAssertEqual(player.playbackTime, 7, accuracy: 0.001, "paused, right after the seek")
        try await Task.sleep(for: .milliseconds(200))
        XCTAssertEqual(player.playbackTime, 7, accuracy: 0.001, "paused, later")
        player.playbackTime = 12
        XCTAssertEqual(player.playbackTime, 12, accuracy: 0.001, "a second seek while paused")
        try await player.play()
        player.playbackTime = 3
        XCTAssertEqual(player.playbackTime, 3, accuracy: 0.05, "playing, right after the seek")
        await eventually("playing on from 3 s") { player.playbackTime > 3.1 } detail: { "\(player.playbackTime)" }
        XCTAssertLessThan(player.playbackTime, 5)
    }

    /// Paused, a skip makes the entry it goes to the current one when it returns (a paused app
    /// shows it), playback stays paused, and play() resumes with that entry; on the last entry
    /// a skip leaves it there (it used to drop the entry's decoded start and wait 2 s).
    /// A player left paused releases its output after `releaseWhenPausedAfter` (issue #41: a
    /// paused stream through ALSA's pulse plugin woke ~2.6 times a second): the stream is closed,
    /// the player stays paused at the same time, and `play()` goes on from there, heard. A
    /// resume before the delay keeps the stream.
    func testAPlayerLeftPausedReleasesItsOutputAndPlaysOnFromWhereItWasPaused() async throws {
        let (songs, _) = try GeneratedSongs.tones([440, 550], frames: 44_100 * 8, into: directory)
        var configuration = try AudioTestEnvironment.sinkConfiguration()
        configuration.releaseWhenPausedAfter = .milliseconds(400)
        let player = ApplicationMusicPlayer(engineConfiguration: configuration)
        addTeardownBlock { player.stop() }
        let recorder = try SharedMonitor.recorder()
        player.queue = ApplicationMusicPlayer.Queue(for: songs)
        try await player.play()
        waitUntil("1 s heard") { player.playbackTime > 1 }

        // Paused and resumed within the delay: the stream is kept.
        player.pause()
        try await player.play()
        try await Task.sleep(nanoseconds: 600_000_000)  // past the delay the first pause set
        XCTAssertNotNil(player.engineStatistics.device, "resumed before the delay: the stream is kept")
        XCTAssertEqual(player.state.playbackStatus, .playing)

        player.pause()
        let pausedAt = player.playbackTime
        waitUntil("the output released") { player.engineStatistics.device == nil }
        XCTAssertEqual(player.state.playbackStatus, .paused, "still paused for the person")
        XCTAssertEqual(player.playbackTime, pausedAt, accuracy: 0.02, "at the time it was paused")
        XCTAssertEqual(player.queue.currentEntry?.title, "Tone 1")

        let pressed = monotonicNanoseconds()
        try await player.play()
        XCTAssertNotNil(recorder.firstSound(after: pressed, timeout: 2), "heard again after play()")
        XCTAssertEqual(player.state.playbackStatus, .playing)
        XCTAssertGreaterThanOrEqual(player.playbackTime, pausedAt - 0.02, "on from where it was paused")
        XCTAssertLessThan(player.playbackTime, pausedAt + 1, "not from the start, not skipped ahead")
        XCTAssertEqual(player.queue.currentEntry?.title, "Tone 1")
        waitUntil("moving") { player.playbackTime > pausedAt + 0.2 }
    }

    func testASkipWhilePausedMovesTheCurrentEntryAtOnceAndStaysPaused() async throws {
        let (songs, _) = try GeneratedSongs.tones([440, 660, 880], frames: 44_100 * 5, into: directory)
        let player = try sharedPlayer()
        player.queue = ApplicationMusicPlayer.Queue(for: songs)
        try await player.play()
        player.pause()
        try await player.skipToNextEntry()
        XCTAssertEqual(player.queue.currentEntry?.title, "Tone 2", "the current entry when the skip returns")
        XCTAssertEqual(player.state.playbackStatus, .paused)
        try await player.skipToPreviousEntry()
        XCTAssertEqual(player.queue.currentEntry?.title, "Tone 1")
        try await player.skipToNextEntry()
        try await player.skipToNextEntry()
        XCTAssertEqual(player.queue.currentEntry?.title, "Tone 3")
        XCTAssertEqual(player.state.playbackStatus, .paused)
        try await player.skipToNextEntry()  // the last entry: nothing to skip to, and nothing is lost
        XCTAssertEqual(player.queue.currentEntry?.title, "Tone 3", "a skip on the last entry, paused, stays there")
        XCTAssertEqual(player.state.playbackStatus, .paused)

        let log = PlayerEventLog(player)
        try await player.play()
        await log.wait("Tone 3 heard") { !$0.startedTitles.isEmpty }
        XCTAssertEqual(log.startedTitles.first, "Tone 3", "play() resumes with the entry skipped to")
    }

    func testASkipLeavesARepeatedEntryForTheNextOne() async throws {
        let (songs, _) = try GeneratedSongs.tones([440, 880], frames: 44_100 * 5, into: directory)
        let player = try sharedPlayer()
        player.queue = ApplicationMusicPlayer.Queue(for: songs)
        player.state.repeatMode = .one
        try await player.prepareToPlay()
        XCTAssertTrue(player.isPreparedToPlay)
        try await player.play()
        try await player.skipToNextEntry()
        await eventually("the next entry") { player.queue.currentEntry?.title == "Tone 2" }
        XCTAssertEqual(player.state.repeatMode, .one, "repeat one stays on")
    }

    /// Sound Check heard at the monitor (issue #45): two untagged songs 20 dB apart, measured
    /// once (EBU R128), play at ReplayGain's −18 LUFS within 0.5 LU, as FFmpeg's `ebur128` filter
    /// measures what the sink played, with no sample at full scale.
    func testSoundCheckPlaysDifferentlyLoudSongsAtOneLoudness() async throws {
        var songs: [Song] = []
        for (index, amplitude) in [0.5, 0.05].enumerated() {
            let url = directory.appendingPathComponent("level-\(index + 1).flac")
            try writeAudioFile(url, TestSignal.tone(hz: 997, frames: 44_100 * 4, sampleRate: 44_100, channels: 2, amplitude: amplitude),
                               tags: .init(title: "Level \(index + 1)", artist: "Test Artist"))
            songs.append(Song(fileURL: url))
        }
        let store = try XCTUnwrap(LoudnessStore.open(.current))
        for song in songs { store.measureSoon(try XCTUnwrap(song.resource.string("filePath"))) }
        store.waitForMeasurements()
        let player = try sharedPlayer()
        player.loudnessMode = .track
        addTeardownBlock { player.loudnessMode = .off }
        let recorder = try SharedMonitor.recorder()
        player.queue = ApplicationMusicPlayer.Queue(for: songs)
        try await player.play()
        for title in ["Level 1", "Level 2"] {
            await eventually("\(title) heard") { player.queue.currentEntry?.title == title }
            try await Task.sleep(nanoseconds: 1_000_000_000)  // well into it
            let from = monotonicNanoseconds()
            try await Task.sleep(nanoseconds: 1_500_000_000)
            let samples = recorder.chunks(arrivedAfter: from).flatMap(\.samples).prefix(44_100 * 2 * 1)
            XCTAssertLessThan(samples.map { abs(Int($0)) }.max() ?? 0, 32_767, "\(title): no sample at full scale")
            let wav = directory.appendingPathComponent("\(title).wav")
            try writeAudioFile(wav, samples.map { Float($0) / 32_768 })
            let (lufs, integrated) = try ffmpegIntegratedLoudness(wav)
            XCTAssertEqual(lufs, -18, accuracy: 0.5, "\(title) at the monitor: \(integrated)")
        }
    }
}
