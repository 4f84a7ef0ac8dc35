import AudioEngine
import AudioMeasurement
import AudioTestSupport
import Foundation
@testable import MusicKitCore
import Observation
import XCTest

/// `ApplicationMusicPlayer` into ALSA's `file` capture: what the player wrote, bit for bit,
/// as fast as it can decode (no clock), for what comes out rather than when.
final class PlayerCaptureTests: XCTestCase {
    private var directory: URL!
    private var capture: URL!

    override func setUpWithError() throws {
        try useTemporaryEnvironment(self)
        try authorizeTestApp()
        directory = try makeTemporaryDirectory(self)
        capture = directory.appendingPathComponent("capture.raw")
    }

    private var players: [ApplicationMusicPlayer] = []

    private func makePlayer() -> ApplicationMusicPlayer {
        let player = makeCapturePlayer(capture, for: self)
        players.append(player)
        return player
    }

    /// What the device received, once the players stopped: ALSA's `file` plugin holds up to a
    /// buffer before it writes it out (the silence the engine writes past the queue's end
    /// pushes the end out, but the end is announced as it is written, and the rest of that
    /// silence may come a turn of the audio thread later); closing the device writes it all.
    private func captured() throws -> [Int16] {
        for player in players { player.stop() }
        return trimmingTrailingSilence(try readCapture(capture))
    }

    func testLibrarySongsPlayOneAfterTheOtherWithoutAGapBitExact() async throws {
        let signal = TestSignal.sweep(frames: 70_000)
        let songs = try GeneratedSongs.cut(signal, at: [20_011, 45_003], into: directory)
        let player = makePlayer()
        let log = PlayerEventLog(player)
        player.queue = ApplicationMusicPlayer.Queue(for: songs)
        try await player.play()
        await log.wait("the end of the queue") { $0.finished }
        XCTAssertEqual(log.startedTitles, ["part 1", "part 2", "part 3"])
        XCTAssertEqual(try captured(), pcm16(signal))
        XCTAssertEqual(player.state.playbackStatus, .stopped)
        XCTAssertEqual(player.queue.currentEntry?.title, "part 1", "back at the start of the queue")
        XCTAssertEqual(player.state.audioVariant, .lossless)
    }

    /// Loudness normalization from the songs' ReplayGain tags: in `album` mode an album's songs
    /// play at its one gain, gapless (each sample scaled alike); in `track` mode each at its own;
    /// `off` (the default) leaves them bit-exact, as the test above checks.
    func testLoudnessModesPlayTheSongsAtTheirReplayGain() async throws {
        let signal = TestSignal.sweep(frames: 40_000)
        let songs = try GeneratedSongs.cut(signal, at: [17_777], into: directory)
        for (index, song) in songs.enumerated() {
            let path = try XCTUnwrap(song.resource.string("filePath"))
            let tagged = directory.appendingPathComponent("tagged.flac")
            try encodeWithFFmpeg(URL(fileURLWithPath: path), to: tagged, codec: "flac",
                                 arguments: ["-map_metadata", "0", "-metadata", "REPLAYGAIN_TRACK_GAIN=\(index == 0 ? -3 : -9).00 dB",
                                             "-metadata", "REPLAYGAIN_ALBUM_GAIN=-6.00 dB", "-metadata", "REPLAYGAIN_ALBUM_PEAK=0.5"])
            try FileManager.default.removeItem(atPath: path)
            try FileManager.default.moveItem(atPath: tagged.path, toPath: path)
        }
        func scaled(_ samples: ArraySlice<Int16>, dB: Double) -> [Int16] {
            let gain = Float(pow(10, dB / 20))
            return samples.map { Int16((Float($0) / 32_768 * gain * 32_768).rounded(.toNearestOrEven)) }
        }
        let exact = pcm16(signal)
        let cut = 17_777 * 2
        // The account's Sound Check is every player's until one sets its own.
        try MusicAccountSettings.update { $0.soundCheck = .album }
        for (mode, expected) in [(ApplicationMusicPlayer.LoudnessMode?.none, scaled(exact[...], dB: -6)),
                                 (.track, scaled(exact[..<cut], dB: -3) + scaled(exact[cut...], dB: -9)),
                                 (.off, exact)] {
            let player = makePlayer()
            let log = PlayerEventLog(player)
            if let mode { player.loudnessMode = mode } else { XCTAssertEqual(player.loudnessMode, .album, "the account's") }
            player.queue = ApplicationMusicPlayer.Queue(for: songs)
            try await player.play()
            await log.wait("the end of the queue") { $0.finished }
            XCTAssertEqual(try captured(), trimmingTrailingSilence(expected), "\(mode.map { "\($0)" } ?? "the account's album")")
            players.removeAll()
        }
    }

    /// A song without ReplayGain tags is measured (EBU R128) in the background the first time it
    /// is queued with normalization on, playing as it is meanwhile, and from then on plays at
    /// the measured gain: brought to −18 LUFS, never past its true peak.
    func testAnUntaggedSongIsMeasuredOnceAndThenPlaysNormalized() async throws {
        let signal = TestSignal.tone(hz: 997, frames: 44_100 * 2, sampleRate: 44_100, channels: 2, amplitude: 0.5)
        let songs = try GeneratedSongs.cut(signal, at: [], into: directory, name: "loud")
        let path = try XCTUnwrap(songs[0].resource.string("filePath"))
        let measured = try XCTUnwrap(try LoudnessMeter.measure(path: path))
        let gain = ReplayGain.amplitude(gainDB: measured.replayGainDB, peak: measured.truePeak)
        XCTAssertLessThan(gain, 0.6, "a loud tone is turned down")
        let exact = pcm16(signal)
        for (round, expected) in [(1, exact), (2, exact.map { Int16((Float($0) / 32_768 * gain * 32_768).rounded(.toNearestOrEven)) })] {
            let player = makePlayer()
            let log = PlayerEventLog(player)
            player.loudnessMode = .track
            player.queue = ApplicationMusicPlayer.Queue(for: songs)
            try await player.play()
            await log.wait("the end of the queue") { $0.finished }
            XCTAssertEqual(try captured(), trimmingTrailingSilence(expected), "round \(round)")
            players.removeAll()
            LoudnessStore.open(.current)?.waitForMeasurements()
        }
        XCTAssertEqual(LoudnessStore.open(.current)?.measurement(ofFile: path), measured, "kept in the data folder")
    }

    /// A player that plays `songs` repeating one until `starts` entries started, then stopped.
    private func playRepeatingOne(_ songs: [Song], untilStarts starts: Int) async throws -> (ApplicationMusicPlayer, PlayerEventLog) {
        let player = makePlayer()
        let log = PlayerEventLog(player)
        player.queue = ApplicationMusicPlayer.Queue(for: songs)
        player.state.repeatMode = .one
        try await player.play()
        await log.wait("\(starts) starts") { $0.startedTitles.count >= starts }
        player.stop()
        return (player, log)
    }

    func testRepeatOnePlaysTheEntryAgainAndRepeatAllTheQueue() async throws {
        let (songs, signals) = try GeneratedSongs.tones([440, 660], frames: 4_410, into: directory)
        // The fourth start: the third play is then written out whole (stop() ends the capture).
        let (player, log) = try await playRepeatingOne(songs, untilStarts: 4)
        XCTAssertEqual(Array(log.startedTitles.prefix(3)), ["Tone 1", "Tone 1", "Tone 1"])
        let once = pcm16(signals[0])
        XCTAssertEqual(Array(try captured().prefix(3 * once.count)), once + once + once)

        try FileManager.default.removeItem(at: capture)
        let again = PlayerEventLog(player)
        player.state.repeatMode = .all
        player.queue = ApplicationMusicPlayer.Queue(for: songs)
        try await player.play()
        await again.wait("five plays") { $0.startedTitles.count >= 5 }
        player.stop()
        XCTAssertEqual(Array(again.startedTitles.prefix(5)), ["Tone 1", "Tone 2", "Tone 1", "Tone 2", "Tone 1"])
        let second = pcm16(signals[1])
        XCTAssertEqual(Array(try captured().prefix(2 * (once.count + second.count))), once + second + once + second)
    }

    func testACrossfadeTransitionOverlapsTheEntries() async throws {
        let (songs, signals) = try GeneratedSongs.tones([440, 660], frames: 88_200, into: directory)
        let player = makePlayer()
        let log = PlayerEventLog(player)
        XCTAssertEqual(player.transition, .none, "gapless by default")
        player.transition = .crossfade(duration: 1)
        XCTAssertEqual(player.transition, .crossfade(options: .init(duration: 1)))
        XCTAssertEqual(MusicPlayer.Transition.crossfade, .crossfade(options: .init()))
        XCTAssertEqual(MusicPlayer.Transition.crossfade(duration: nil).overlapSeconds, 6, "the default length")
        XCTAssertEqual(MusicPlayer.Transition.crossfade(duration: 30).overlapSeconds, 12, "at most 12 s, as in Music")
        player.queue = ApplicationMusicPlayer.Queue(for: songs)
        try await player.play()
        await log.wait("the end of the queue") { $0.finished }
        let capture = try captured()
        XCTAssertEqual(capture.count, (2 * 88_200 - 44_100) * 2, "one second of overlap")
        XCTAssertEqual(Array(capture.prefix(44_100 * 2)), Array(pcm16(signals[0]).prefix(44_100 * 2)))
        XCTAssertEqual(Array(capture.suffix(44_100 * 2)), Array(pcm16(signals[1]).suffix(44_100 * 2)))
        XCTAssertEqual(log.startedTitles, ["Tone 1", "Tone 2"])
    }

    /// The README's example, as it is written there (between the markers), on the capture device.
    func testTheREADMEExampleRuns() async throws {
        ApplicationMusicPlayer.shared.engineConfiguration = captureConfiguration(capture)
        addTeardownBlock { ApplicationMusicPlayer.shared.stop() }
        let log = PlayerEventLog(ApplicationMusicPlayer.shared)
        // README example begins
        guard await MusicAuthorization.request() == .authorized else { return }
        let subscription = try await MusicSubscription.current

        var request = MusicCatalogResourceRequest<Song>(matching: \.id, memberOf: ["1762000001", "1762000017"])
        request.options = [.findEquivalents]            // IDs from another storefront answer with this one's
        let songs = try await request.response().items

        let player = ApplicationMusicPlayer.shared
        if subscription.canPlayCatalogContent {
            player.queue = ApplicationMusicPlayer.Queue(for: songs)
            try await player.play()                      // returns once the first entry is heard
        }
        withObservationTracking {
            print(player.queue.currentEntry?.title ?? "", player.state.playbackStatus)
        } onChange: {
            print("the next entry is heard, or playback paused")
        }
        try await player.skipToNextEntry()               // from the pre-decoded next entry
        try await player.queue.insert(songs[0], position: .afterCurrentEntry)
        // README example ends
        await log.wait("both songs") { $0.startedTitles.count >= 2 }
        XCTAssertEqual(Array(log.startedTitles.prefix(2)), songs.map(\.title))
        XCTAssertEqual(player.queue.entries.count, 3)
    }

    func testShufflePlaysEveryEntryOnceInAnotherOrder() async throws {
        let frequencies: [Double] = [300, 400, 500, 600, 700, 800, 900, 1_000]
        let (songs, signals) = try GeneratedSongs.tones(frequencies, frames: 2_205, into: directory)
        let player = makePlayer()
        let log = PlayerEventLog(player)
        player.queue = ApplicationMusicPlayer.Queue(for: songs)
        player.state.shuffleMode = .songs
        try await player.play()
        await log.wait("the end of the queue") { $0.finished }
        let titles = log.startedTitles
        XCTAssertEqual(titles.count, songs.count)
        XCTAssertEqual(Set(titles), Set(songs.map(\.title)), "each entry once")
        XCTAssertEqual(titles.first, "Tone 1", "the current entry starts")
        XCTAssertNotEqual(titles, songs.map(\.title), "shuffled (1 in 5040 to fail by chance)")
        let order = titles.map { title in songs.firstIndex { $0.title == title }! }
        XCTAssertEqual(try captured(), order.flatMap { pcm16(signals[$0]) }, "what was heard is what was announced")
    }

    func testCatalogSongsNeedASubscriptionWhileLibrarySongsPlay() async throws {
        let catalogSong = try unwrapped(await MusicCatalogResourceRequest<Song>(matching: \.id, equalTo: BundledCatalog.ezerEv).response().items.first)
        let (library, signals) = try GeneratedSongs.tones([500], frames: 4_410, into: directory)
        try setAccount { $0.isSubscribed = false }
        let player = makePlayer()
        let log = PlayerEventLog(player)

        player.queue = [catalogSong]
        do {
            try await player.play()
            XCTFail("catalog content played without a subscription")
        } catch let error as MusicPlayer.PlaybackError {
            XCTAssertEqual(error, .subscriptionRequired(title: catalogSong.title))
            XCTAssertTrue(error.description.contains("subscription"), error.description)
        }
        XCTAssertEqual(player.state.playbackStatus, .stopped)

        // A library song plays; the catalog song after it is skipped, saying why.
        player.queue = ApplicationMusicPlayer.Queue(for: [library[0], catalogSong])
        try await player.play()
        await log.wait("the end of the queue") { $0.finished }
        XCTAssertEqual(log.startedTitles, ["Tone 1"])
        XCTAssertEqual(log.failures.map(\.title), [catalogSong.title])
        XCTAssertTrue(log.failures.first?.reason.contains("subscription") ?? false, "\(log.failures)")
        XCTAssertEqual(try captured(), pcm16(signals[0]))

        // Not authorized: asking for the subscription is refused.
        try MusicAuthorizationSettings.set(.denied, for: MusicKitEnvironment.current.applicationIdentifier)
        player.queue = [catalogSong]
        do {
            try await player.play()
            XCTFail("played without authorization")
        } catch let error as MusicSubscription.Error {
            XCTAssertEqual(error, .permissionDenied)
        }
    }

    /// 26.4's custom start and end times (`Song.startTime`/`endTime`): a catalog song whose
    /// document gives them plays from its start frame to its end frame and on into the next song
    /// without a gap, bit-exact; an entry's own times come before the song's; a document whose
    /// end comes before its start is refused, naming the field.
    func testASongsCustomStartAndEndTimesArePlayedAndGaplessIntoTheNext() async throws {
        let sweep = TestSignal.sweep(frames: 44_100)
        let tone = TestSignal.tone(hz: 660, frames: 4_410, sampleRate: 44_100, channels: 2)
        try writeAudioFile(directory.appendingPathComponent("cut.flac"), sweep)
        try writeAudioFile(directory.appendingPathComponent("whole.flac"), tone)
        let document = directory.appendingPathComponent("times.json")
        try Data(#"""
            {"storefront": "us", "data": [
              {"id": "900000101", "type": "songs", "attributes": {"name": "Cut", "artistName": "Me", "durationInMillis": 1000,
               "startTimeInMillis": 250, "endTimeInMillis": 500, "previews": [{"url": "cut.flac"}],
               "playParams": {"id": "900000101", "kind": "song"}}},
              {"id": "900000102", "type": "songs", "attributes": {"name": "Whole", "artistName": "Me", "durationInMillis": 100,
               "previews": [{"url": "whole.flac"}], "playParams": {"id": "900000102", "kind": "song"}}}
            ]}
            """#.utf8).write(to: document)
        let backwards = directory.appendingPathComponent("backwards.json")
        try Data(#"""
            {"storefront": "us", "data": [{"id": "900000103", "type": "songs", "attributes": {"name": "Backwards",
              "durationInMillis": 1000, "startTimeInMillis": 500, "endTimeInMillis": 250}}]}
            """#.utf8).write(to: backwards)
        XCTAssertThrowsError(try MusicCatalogIndex.importDocuments([backwards], environment: .current)) { error in
            XCTAssertEqual((error as? CatalogDocumentError)?.jsonPath, "data[0].attributes.endTimeInMillis", "\(error)")
        }
        _ = try MusicCatalogIndex.importDocuments([document], environment: .current)
        let songs = try await MusicCatalogResourceRequest<Song>(matching: \.id, memberOf: ["900000101", "900000102"]).response().items
        XCTAssertEqual(songs.map(\.title), ["Cut", "Whole"])
        XCTAssertEqual(songs[0].startTime, 0.25)
        XCTAssertEqual(songs[0].endTime, 0.5)
        XCTAssertNil(songs[1].startTime)
        XCTAssertEqual(Track.song(songs[0]).endTime, 0.5)
        try setAccount { $0.isSubscribed = true }

        let player = makePlayer()
        let log = PlayerEventLog(player)
        player.queue = ApplicationMusicPlayer.Queue(for: Array(songs))
        try await player.play()
        await log.wait("the end of the queue") { $0.finished }
        let exact = pcm16(sweep)
        XCTAssertEqual(try captured(), trimmingTrailingSilence(Array(exact[(11_025 * 2)..<(22_050 * 2)]) + pcm16(tone)),
                       "frames 11,025 to 22,050 of the first song, then the second whole")
        players.removeAll()

        // An entry's own times come first.
        let own = makePlayer()
        let ownLog = PlayerEventLog(own)
        own.queue.entries = [MusicPlayer.Queue.Entry(songs[0], startTime: 0.5, endTime: 0.75)]
        try await own.play()
        await ownLog.wait("the end of the queue") { $0.finished }
        XCTAssertEqual(try captured(), trimmingTrailingSilence(Array(exact[(22_050 * 2)..<(33_075 * 2)])))
    }

    func testAnEmptyQueueOrNothingPlayableIsAClearError() async throws {
        let player = makePlayer()
        do {
            try await player.play()
            XCTFail("an empty queue played")
        } catch let error as MusicPlayer.PlaybackError {
            XCTAssertEqual(error, .emptyQueue)
        }
        let missing = Song(fileURL: directory.appendingPathComponent("missing.flac"))
        XCTAssertEqual(missing.title, "missing")
        player.queue = [missing]
        do {
            try await player.play()
            XCTFail("a missing file played")
        } catch let error as MusicPlayer.PlaybackError {
            guard case .nothingPlayable(let reasons) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(reasons.first?.contains("missing.flac") ?? false, "\(reasons)")
        }
    }

    func testAFileThatCannotBeReadIsSkippedWithTheReason() async throws {
        let (songs, signals) = try GeneratedSongs.tones([400, 800], frames: 4_410, into: directory)
        let broken = directory.appendingPathComponent("broken.flac")
        try Data("fLaC but not really".utf8).write(to: broken)
        let player = makePlayer()
        let log = PlayerEventLog(player)
        player.queue = ApplicationMusicPlayer.Queue(for: [songs[0], Song(fileURL: broken), songs[1]])
        try await player.play()
        await log.wait("the end of the queue") { $0.finished }
        XCTAssertEqual(log.startedTitles, ["Tone 1", "Tone 2"])
        XCTAssertEqual(log.failures.map(\.title), ["broken"])
        XCTAssertTrue(log.failures.first?.reason.contains("broken.flac") ?? false, "\(log.failures)")
        XCTAssertEqual(try captured(), pcm16(signals[0] + signals[1]))
    }

    /// Part of an album that cannot be loaded (here its page loader fails): its entries keep
    /// their places, fail with the loader's reason when they are reached, and playback goes on.
    func testEntriesWhosePageCannotBeLoadedFailWithTheReasonAndPlaybackGoesOn() async throws {
        let (songs, signals) = try GeneratedSongs.tones([400, 800], frames: 4_410, into: directory)
        let album = ResourceObject(id: "unreadable-album", type: "albums")
        let unreadable = ContainerTracks(container: album, count: 2) { _ in
            throw ContainerTracks.LoadError(reason: "the test's catalog is unreadable")
        }
        let queue = ApplicationMusicPlayer.Queue(items: [])
        queue.replaceContents(QueueContents(parts: [.segment(.entries([.init(resource: songs[0].resource)])),
                                                    .segment(.lazy(unreadable, 0..<2)),
                                                    .segment(.entries([.init(resource: songs[1].resource)]))]))
        XCTAssertEqual(queue.entries.count, 4, "the unloaded entries hold their places")
        let player = makePlayer()
        let log = PlayerEventLog(player)
        player.queue = queue
        try await player.play()
        await log.wait("the end of the queue") { $0.finished }
        XCTAssertEqual(log.startedTitles, ["Tone 1", "Tone 2"])
        XCTAssertEqual(log.failures.map(\.reason), Array(repeating: "the test's catalog is unreadable", count: 2))
        XCTAssertEqual(try captured(), pcm16(signals[0] + signals[1]))
    }

    /// The listening history listens to the player's events; when the library cannot take a
    /// play, the player says so in an event (nothing is printed, playback goes on).
    func testAHistoryThatCannotBeWrittenIsAnEventNotASilentLoss() async throws {
        let (songs, signals) = try GeneratedSongs.tones([500], frames: 2_205, into: directory)
        // A directory where the library's database goes: SQLite cannot open it.
        let library = MusicKitEnvironment.current.dataDirectory.appendingPathComponent("library.sqlite")
        try FileManager.default.createDirectory(at: library, withIntermediateDirectories: true)
        MusicLibraryService.reset()
        let player = makePlayer()
        let log = PlayerEventLog(player)
        player.queue = ApplicationMusicPlayer.Queue(for: songs)
        try await player.play()
        await log.wait("the end of the queue and the history's answer") { log in
            log.finished && log.events.contains { if case .historyNotRecorded = $0 { true } else { false } }
        }
        let reasons = log.events.compactMap { if case .historyNotRecorded(let entry, let reason) = $0 { (entry.title, reason) } else { nil } }
        XCTAssertEqual(reasons.map(\.0), ["Tone 1"])
        XCTAssertTrue(reasons.first?.1.contains("listening history") ?? false, "\(reasons)")
        XCTAssertEqual(try captured(), pcm16(signals[0]))
    }

    /// Plays that come faster than the history is written (a short song, repeated, on a device
    /// without a clock) are written together, and none is lost.
    func testEveryPlayOfARepeatedSongIsInTheHistory() async throws {
        let (songs, _) = try GeneratedSongs.tones([500], frames: 441, into: directory)
        let (player, log) = try await playRepeatingOne(songs, untilStarts: 200)
        // After stop() the last starts may still be on their way to the log and to the history's
        // listener (each has its own stream of the player's events): compared once both have
        // them all (a count read at once differed, 204 seen against 219 recorded, once).
        var recorded: [(played: Date, entry: ResourceObject, container: ResourceObject?)] = []
        await log.wait("as many starts seen as plays recorded") { log in
            player.waitForHistoryWrites()
            recorded = (try? MusicLibraryService.open().withStore { try $0.plays(since: .distantPast, limit: 100_000) }) ?? []
            return log.startedTitles.count == recorded.count
        }
        XCTAssertEqual(recorded.count, log.startedTitles.count, "one play in the history per start")
        XCTAssertEqual(Set(recorded.map(\.entry.id)), [songs[0].id.rawValue], "the song, each time")
    }

    func testPlaybackTimeSetBeforePlayStartsThere() async throws {
        let signal = TestSignal.sweep(frames: 44_100)
        let songs = try GeneratedSongs.cut(signal, at: [], into: directory)
        let player = makePlayer()
        let log = PlayerEventLog(player)
        player.queue = ApplicationMusicPlayer.Queue(for: songs)
        player.playbackTime = 0.25
        XCTAssertEqual(player.playbackTime, 0.25)
        try await player.play()
        await log.wait("the end of the queue") { $0.finished }
        XCTAssertEqual(try captured(), Array(pcm16(signal)[(11_025 * 2)...]))
    }

    func testPrepareToPlayFillsTheDeviceBeforePlay() async throws {
        let (songs, signals) = try GeneratedSongs.tones([440], frames: 8_820, into: directory)
        let player = makePlayer()
        let log = PlayerEventLog(player)
        player.queue = ApplicationMusicPlayer.Queue(for: songs)
        XCTAssertFalse(player.isPreparedToPlay)
        try await player.prepareToPlay()
        XCTAssertTrue(player.isPreparedToPlay)
        XCTAssertEqual(player.state.playbackStatus, .stopped, "prepared, not playing")
        XCTAssertTrue(log.startedTitles.isEmpty)
        try await player.play()
        await log.wait("the end of the queue") { $0.finished }
        XCTAssertEqual(try captured(), pcm16(signals[0]))
    }

    /// The bundled gapless album from the catalog: its tracks play and go to the listening
    /// history with the album; a queue that says so, or the account's switch, keeps them out.
    func testPlayedEntriesGoToTheListeningHistoryUnlessSwitchedOff() async throws {
        let album = try unwrapped(await MusicCatalogResourceRequest<Album>(matching: \.id, equalTo: BundledCatalog.gaplessAlbum).response().items.first)
        let player = makePlayer()
        let log = PlayerEventLog(player)
        player.queue = [album]
        try await player.play()
        await log.wait("the end of the queue") { $0.finished }
        player.waitForHistoryWrites()
        let tracks = try await album.with([.tracks]).tracks ?? []
        XCTAssertEqual(log.startedTitles, tracks.map(\.title))

        var songs = MusicRecentlyPlayedRequest<Song>()
        songs.limit = 10
        let played = try await songs.response().items
        XCTAssertEqual(played.map(\.id), tracks.reversed().map(\.id), "newest first")
        let containers = try await MusicRecentlyPlayedContainerRequest().response().items
        XCTAssertEqual(containers.map(\.id), [album.id])
        XCTAssertEqual(containers.first?.title, album.title)
        XCTAssertEqual(containers.first?.subtitle, album.artistName)
        guard case .album(let played) = try XCTUnwrap(containers.first) else { return XCTFail("\(containers)") }
        XCTAssertEqual(played.id, album.id, "the container is the album")
        // As tracks (Apple's `MusicRecentlyPlayedRequest<Track>`): the same songs, newest first.
        let asTracks = try await MusicRecentlyPlayedRequest<Track>().response().items
        XCTAssertEqual(asTracks.map(\.id), tracks.reversed().map(\.id))
        XCTAssertTrue(asTracks.allSatisfy { if case .song = $0 { true } else { false } }, "songs, as `.song` tracks")
        let videos = try await MusicRecentlyPlayedRequest<MusicVideo>().response().items
        XCTAssertTrue(videos.isEmpty, "no music video was played")

        // The queue keeps out of the history.
        let (library, _) = try GeneratedSongs.tones([500], frames: 2_205, into: directory)
        let quiet = ApplicationMusicPlayer.Queue(for: library)
        quiet.affectsListeningHistory = false
        player.queue = quiet
        XCTAssertFalse(player.queue.affectsListeningHistory)
        try await player.play()
        await log.wait("the second queue's end") { $0.events.filter { $0 == .queueFinished }.count == 2 }
        player.waitForHistoryWrites()
        let afterQuiet = try await MusicRecentlyPlayedRequest<Song>().response().items
        XCTAssertEqual(afterQuiet.first?.id, tracks.last?.id, "not recorded: the queue said so")

        // The account's "Use Listening History" is off.
        try setAccount { $0.usesListeningHistory = false }
        player.queue = ApplicationMusicPlayer.Queue(for: library)
        try await player.play()
        await log.wait("the third queue's end") { $0.events.filter { $0 == .queueFinished }.count == 3 }
        player.waitForHistoryWrites()
        let afterOff = try await MusicRecentlyPlayedRequest<Song>().response().items
        XCTAssertEqual(afterOff.first?.id, tracks.last?.id, "not recorded: the account said so")

        try setAccount { $0.usesListeningHistory = true }
        player.queue = ApplicationMusicPlayer.Queue(for: library)
        try await player.play()
        await log.wait("the fourth queue's end") { $0.events.filter { $0 == .queueFinished }.count == 4 }
        player.waitForHistoryWrites()
        let afterOn = try await MusicRecentlyPlayedRequest<Song>().response().items
        XCTAssertEqual(afterOn.first?.id, library[0].id)
    }

    func testALongPlaylistStartsWithoutLoadingItsEntries() async throws {
        let preview = directory.appendingPathComponent("preview.flac")
        try writeAudioFile(preview, TestSignal.tone(hz: 440, frames: 2_205, sampleRate: 44_100, channels: 2))
        try LongPlaylist.write(trackCount: 3_000, into: MusicCatalogService.userDocumentsDirectory(.current),
                               previewPath: preview.path)
        let playlist = try unwrapped(await MusicCatalogResourceRequest<Playlist>(matching: \.id, equalTo: LongPlaylist.id).response().items.first)
        let player = makePlayer()
        let log = PlayerEventLog(player)
        player.queue = [playlist]
        XCTAssertEqual(player.queue.entries.count, 3_000)
        try await player.play()
        await log.wait("five entries") { $0.startedTitles.count >= 5 }
        player.stop()
        try await Task.sleep(for: .milliseconds(50))  // the last events arrive
        let started = log.startedTitles
        XCTAssertEqual(Array(started.prefix(5)), ["Song 0", "Song 1", "Song 2", "Song 3", "Song 4"])
        let pages = started.count / QueueContents.pageSize + 2
        XCTAssertLessThanOrEqual(player.queue.snapshot.contents.loadedEntryCount, pages * QueueContents.pageSize,
                                 "only the pages reached (and the next one) are loaded, of 3,000 entries")
    }
}
