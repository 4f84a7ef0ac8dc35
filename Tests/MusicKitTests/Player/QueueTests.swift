import AudioEngine
import Foundation
@testable import MusicKitCore
import Observation
import Synchronization
import XCTest

/// The player's queue without playing: initializers, lazy containers, the entries collection,
/// inserts, and what Observation sees.
final class QueueTests: XCTestCase {
    override func setUpWithError() throws {
        try useTemporaryEnvironment(self)
    }

    private func songs(_ ids: [MusicItemID]) async throws -> [Song] {
        let response = try await MusicCatalogResourceRequest<Song>(matching: \.id, memberOf: ids).response()
        return ids.compactMap { response.item(for: $0) }
    }

    private func gaplessAlbum() async throws -> Album {
        try await unwrapped(MusicCatalogResourceRequest<Album>(matching: \.id, equalTo: BundledCatalog.gaplessAlbum)
            .response().items.first)
    }

    func testAQueueOfSongsStartsAtTheItemAsked() async throws {
        let songs = try await songs(["1762000001", "1762000002", "1762000003"])
        let queue = ApplicationMusicPlayer.Queue(for: songs, startingAt: songs[1])
        XCTAssertEqual(queue.entries.count, 3)
        XCTAssertEqual(queue.entries.map(\.title), songs.map(\.title))
        XCTAssertEqual(queue.currentEntry?.item?.id, songs[1].id)
        XCTAssertEqual(queue.currentEntry?.title, songs[1].title)
        XCTAssertEqual(queue.currentEntry?.subtitle, "\(songs[1].artistName) — \(songs[1].albumTitle ?? "")")
        XCTAssertNotNil(queue.currentEntry?.artwork?.url(width: 100, height: 100))
        XCTAssertFalse(queue.currentEntry!.isTransient)
        XCTAssertEqual(Set(queue.entries.map(\.id)).count, 3, "entry ids are unique")
    }

    func testAnArrayLiteralHoldsSongsAndTheTracksOfAlbumsAndPlaylists() async throws {
        let song = try await songs(["1762000005"])[0]
        let album = try await gaplessAlbum()
        let playlist = try await unwrapped(MusicCatalogSearchRequest(term: "Gapless Demo", types: [Playlist.self])
            .response().playlists.first)
        let queue: ApplicationMusicPlayer.Queue = [song, album, playlist]
        let albumTracks = try await album.with([.tracks]).tracks ?? []
        let playlistTracks = try await playlist.with([.tracks]).tracks ?? []
        XCTAssertEqual(queue.entries.count, 1 + albumTracks.count + playlistTracks.count)
        XCTAssertEqual(queue.entries.map(\.title), [song.title] + albumTracks.map(\.title) + playlistTracks.map(\.title))
        XCTAssertEqual(queue.currentEntry?.title, song.title)
    }

    /// Apple's `PlayableMusicItem`s besides songs and containers (issue #43): a playlist's
    /// entries and what they hold, a recently played container, and a queue entry's item.
    func testPlaylistEntriesRecentContainersAndQueueItemsArePlayable() async throws {
        let playlist = try await unwrapped(MusicCatalogSearchRequest(term: "Gapless Demo", types: [Playlist.self])
            .response().playlists.first).with([.tracks])
        let entries = try XCTUnwrap(playlist.entries)
        let titles = entries.map(\.title)
        XCTAssertFalse(titles.isEmpty)
        XCTAssertEqual(ApplicationMusicPlayer.Queue(for: entries).entries.map(\.title), titles, "the entries")
        let items = entries.compactMap(\.item)
        XCTAssertEqual(ApplicationMusicPlayer.Queue(for: items).entries.map(\.title), titles, "what the entries hold")
        XCTAssertEqual(items.map(\.id), entries.compactMap(\.item?.id), "Identifiable")

        let album = try await gaplessAlbum()
        let recent: [RecentlyPlayedMusicItem] = [.album(album)]
        let albumTracks = try await album.with([.tracks]).tracks ?? []
        XCTAssertEqual(ApplicationMusicPlayer.Queue(for: recent).entries.map(\.title), albumTracks.map(\.title),
                       "a recently played album: its tracks")

        let queue = ApplicationMusicPlayer.Queue(for: entries)
        let queued = queue.entries.compactMap(\.item)
        XCTAssertEqual(ApplicationMusicPlayer.Queue(for: queued).entries.map(\.title), titles, "a queue entry's item, queued again")
    }

    func testAnAlbumQueueStartsAtTheTrackAsked() async throws {
        let album = try await gaplessAlbum().with([.tracks])
        let tracks = try XCTUnwrap(album.tracks)
        let queue = ApplicationMusicPlayer.Queue(album: album, startingAt: tracks[2])
        XCTAssertEqual(queue.currentEntry?.title, tracks[2].title)
        XCTAssertEqual(queue.entries.count, tracks.count)
    }

    /// A playlist as long as a big library's: the queue knows its length and loads only the
    /// page around the entry it starts at, then the pages that are read.
    func testALongPlaylistQueueLoadsOnlyThePagesItReads() async throws {
        let trackCount = 3_000
        let environment = MusicKitEnvironment.current
        try LongPlaylist.write(trackCount: trackCount, into: MusicCatalogService.userDocumentsDirectory(environment),
                               previewPath: "/nonexistent/preview.flac")
        let playlist = try await unwrapped(MusicCatalogResourceRequest<Playlist>(matching: \.id, equalTo: LongPlaylist.id)
            .response().items.first)
        let start = Playlist.Entry(resource: ResourceObject(id: LongPlaylist.songID(2_500), type: "songs"), position: 2_500)
        let queue = ApplicationMusicPlayer.Queue(playlist: playlist, startingAt: start)
        XCTAssertEqual(queue.snapshot.contents.loadedEntryCount, QueueContents.pageSize, "one page loaded")
        XCTAssertEqual(queue.currentEntry?.title, "Song 2500")
        let entries = queue.entries
        XCTAssertEqual(entries.count, trackCount)
        XCTAssertEqual(entries[10].title, "Song 10")
        XCTAssertEqual(entries[trackCount - 1].title, "Song \(trackCount - 1)")
        let lastPage = trackCount - (trackCount - 1) / QueueContents.pageSize * QueueContents.pageSize
        XCTAssertEqual(queue.snapshot.contents.loadedEntryCount, 2 * QueueContents.pageSize + lastPage)
        XCTAssertEqual(entries.map(\.title).prefix(3), ["Song 0", "Song 1", "Song 2"], "iterating loads the rest")
        XCTAssertEqual(queue.snapshot.contents.loadedEntryCount, trackCount)
    }

    func testEntriesIsARangeReplaceableCollectionThatCopiesOnWrite() async throws {
        let songs = try await songs(["1762000001", "1762000002", "1762000003", "1762000004"])
        let queue = ApplicationMusicPlayer.Queue(for: songs.prefix(3))
        let before = queue.entries
        var entries = queue.entries
        let transient = MusicPlayer.Queue.Entry(songs[3], startTime: 1, endTime: 2)
        XCTAssertTrue(transient.isTransient)
        XCTAssertNil(transient.item)
        XCTAssertEqual(transient.transientItem?.id, songs[3].id)
        entries.append(transient)
        entries.remove(at: 0)
        entries.swapAt(0, 1)
        XCTAssertEqual(entries.map(\.title), [songs[2].title, songs[1].title, songs[3].title])
        XCTAssertFalse(entries[2].isTransient, "the queue owns what it holds")
        XCTAssertEqual(entries[2].startTime, 1)
        XCTAssertEqual(entries[2].endTime, 2)
        XCTAssertEqual(before.map(\.title), songs.prefix(3).map(\.title), "a copy does not change")
        XCTAssertEqual(queue.entries, before)

        let slice = entries[1..<3]
        XCTAssertEqual(slice.startIndex, 1, "slices keep the collection's indices")
        XCTAssertEqual(slice.map(\.title), [songs[1].title, songs[3].title])

        queue.entries = entries
        XCTAssertEqual(queue.entries.map(\.title), entries.map(\.title))
        XCTAssertEqual(queue.currentEntry?.title, songs[2].title,
                       "the current entry was removed: the one that took its place is current")
        let empty = ApplicationMusicPlayer.Queue.Entries()
        XCTAssertTrue(empty.isEmpty)
        let literal: ApplicationMusicPlayer.Queue.Entries = [transient]
        XCTAssertEqual(literal.count, 1)
        XCTAssertEqual(literal.index(0, offsetBy: 5, limitedBy: 1), nil)
    }

    func testInsertsGoAfterTheCurrentEntryOrAtTheTail() async throws {
        let songs = try await songs(["1762000001", "1762000002", "1762000003", "1762000004"])
        let album = try await gaplessAlbum()
        let queue = ApplicationMusicPlayer.Queue(for: songs.prefix(2))
        try await queue.insert(songs[2], position: .afterCurrentEntry)
        try await queue.insert(MusicPlayer.Queue.Entry(songs[3]), position: .tail)
        try await queue.insert(album, position: .tail)
        let albumTitles = try await album.with([.tracks]).tracks?.map(\.title) ?? []
        XCTAssertEqual(queue.entries.map(\.title),
                       [songs[0].title, songs[2].title, songs[1].title, songs[3].title] + albumTitles)
        XCTAssertEqual(queue.currentEntry?.title, songs[0].title)

        let empty = ApplicationMusicPlayer.Queue(for: [Song]())
        XCTAssertNil(empty.currentEntry)
        try await empty.insert(songs[1], position: .afterCurrentEntry)
        XCTAssertEqual(empty.currentEntry?.title, songs[1].title, "the first entry of an empty queue becomes current")
    }

    func testObservationSeesEntryEditsAndTheCurrentEntry() async throws {
        let songs = try await songs(["1762000001", "1762000002", "1762000003"])
        let queue = ApplicationMusicPlayer.Queue(for: songs.prefix(2))
        let entriesChanged = expectation(description: "entries")
        withObservationTracking { _ = queue.entries } onChange: { entriesChanged.fulfill() }
        try await queue.insert(songs[2], position: .tail)
        await fulfillment(of: [entriesChanged], timeout: 1)

        let currentChanged = expectation(description: "current entry")
        let notified = expectation(description: "nothing else")
        notified.isInverted = true
        withObservationTracking { _ = queue.currentEntry } onChange: { currentChanged.fulfill() }
        withObservationTracking { _ = queue.affectsListeningHistory } onChange: { notified.fulfill() }
        queue.currentEntry = queue.entries[2]
        await fulfillment(of: [currentChanged, notified], timeout: 0.2)
        XCTAssertEqual(queue.currentEntry?.title, songs[2].title)
    }

    /// A page that cannot be loaded becomes entries that say why: the count stays true and
    /// reading the queue does not trap.
    func testAPageThatCannotBeLoadedBecomesEntriesThatSayWhy() {
        let container = ResourceObject(id: "a1", type: "albums")
        let tracks = ContainerTracks(container: container, count: QueueContents.pageSize + 2) { range in
            guard range.lowerBound < QueueContents.pageSize else { throw ContainerTracks.LoadError(reason: "page 2 is gone") }
            return range.map { ResourceObject(id: "t\($0)", type: "songs", attributes: ["name": .string("Track \($0)")]) }
        }
        let contents = QueueContents(lazy: tracks)
        XCTAssertEqual(contents.entry(at: 3)?.title, "Track 3")
        XCTAssertNil(contents.entry(at: 3)?.unavailableReason)
        let failed = contents.entry(at: QueueContents.pageSize + 1)
        XCTAssertEqual(failed?.unavailableReason, "page 2 is gone")
        XCTAssertEqual(contents.count, QueueContents.pageSize + 2)
        let source = failed.map { PlaybackServices.source(of: $0, catalogAccess: .allowed) }
        XCTAssertEqual(source, .unplayable(reason: "page 2 is gone"))
    }

    /// The engine's decoder thread reads the queue (and may wait for a page) without holding
    /// the provider's lock: the player's controls go through meanwhile, and the answer being
    /// loaded is decided again because they changed what comes next.
    func testAPageLoadDoesNotHoldUpThePlayersControls() throws {
        let loading = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let tracks = ContainerTracks(container: ResourceObject(id: "slow", type: "albums"), count: 2) { range in
            loading.signal()
            _ = release.wait(timeout: .now() + 10)
            return range.map { ResourceObject(id: "s\($0)", type: "songs", attributes: ["filePath": .string("/music/s\($0).flac")]) }
        }
        // A page of entries made, then the slow album: the page after the last made entry is the slow one.
        let made = (0..<QueueContents.pageSize).map { index in
            MusicPlayer.Queue.Entry(resource: ResourceObject(id: "m\(index)", type: "songs",
                                                             attributes: ["filePath": .string("/music/m\(index).flac")]))
        }
        let queue = ApplicationMusicPlayer.Queue(items: [])
        queue.replaceContents(QueueContents(parts: [.segment(.entries(made)), .segment(.lazy(tracks, 0..<2))]))
        let provider = PlayerQueueProvider(queue: queue)
        provider.reset(startingAt: made.last?.id, catalogAccess: .decided(.allowed))
        let firstAnswer = try XCTUnwrap(provider.entry(after: nil))
        XCTAssertEqual(firstAnswer.path, "/music/m\(QueueContents.pageSize - 1).flac")

        let answer = Mutex<AudioEntry?>(nil)
        let answered = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            answer.withLock { $0 = provider.entry(after: firstAnswer.token) }
            answered.signal()
        }
        XCTAssertEqual(loading.wait(timeout: .now() + 10), .success, "the decoder reads the next page")
        let controls = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            provider.setModes(repeatMode: .none, shuffles: false)
            provider.jump(to: made[0].id)
            controls.signal()
        }
        let controlsWent = controls.wait(timeout: .now() + 10)
        release.signal()
        XCTAssertEqual(controlsWent, .success, "the controls waited for the page load")
        XCTAssertEqual(answered.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(answer.withLock { $0 }?.path, "/music/m0.flac", "decided again: the jump goes first")
    }
}

extension QueueTests {
    /// A skip back (a jump) is decoded, and the engine asks what follows it to decode ahead
    /// before it is heard: the entry after the jump's target, not the target again (which made
    /// the next skip replay the target, and every skip after it).
    func testTheEntryAfterAJumpsTargetIsTheNextInTheQueue() throws {
        let entries = (0..<3).map { index in
            MusicPlayer.Queue.Entry(resource: ResourceObject(id: "j\(index)", type: "songs",
                                                             attributes: ["filePath": .string("/music/j\(index).flac")]))
        }
        let queue = ApplicationMusicPlayer.Queue(items: [])
        queue.replaceContents(QueueContents(parts: [.segment(.entries(entries))]))
        let provider = PlayerQueueProvider(queue: queue)
        provider.reset(startingAt: entries[0].id, catalogAccess: .decided(.allowed))
        let first = try XCTUnwrap(provider.entry(after: nil))
        let second = try XCTUnwrap(provider.entry(after: first.token))
        _ = provider.started(first.token)
        _ = provider.started(second.token)

        provider.jump(to: entries[0].id)  // previous, from the second entry
        let target = try XCTUnwrap(provider.entry(after: second.token))
        XCTAssertEqual(target.path, "/music/j0.flac")
        let ahead = try XCTUnwrap(provider.entry(after: target.token), "decoded ahead before the target is heard")
        XCTAssertEqual(ahead.path, "/music/j1.flac")
        XCTAssertNotEqual(ahead.token, target.token)
        XCTAssertEqual(provider.entry(after: second.token)?.token, target.token, "the entry left still goes to the target")
        _ = provider.started(target.token)
        XCTAssertNil(provider.pendingJumpEntryID, "the jump is done when its target is heard")
        XCTAssertEqual(provider.entry(after: target.token)?.token, ahead.token)
    }
}

extension QueueTests {
    /// A session that starts on a file leaves the catalog access for its first catalog entry (no
    /// account read before the first sound): the account as it is then decides, once.
    func testASessionStartingOnAFileDecidesCatalogAccessAtItsFirstCatalogEntry() throws {
        try authorizeTestApp()
        try setAccount { $0.isSubscribed = true }
        let file = MusicPlayer.Queue.Entry(resource: ResourceObject(id: "f0", type: "library-songs",
                                                                    attributes: ["filePath": .string("/music/f0.flac")]))
        let catalog = (1...2).map { index in
            MusicPlayer.Queue.Entry(resource: ResourceObject(id: "c\(index)", type: "songs", attributes: ["name": .string("C\(index)")]))
        }
        let queue = ApplicationMusicPlayer.Queue(items: [])
        queue.replaceContents(QueueContents(parts: [.segment(.entries([file] + catalog))]))
        let provider = PlayerQueueProvider(queue: queue)
        let access = PlaybackServices.SessionCatalogAccess.whenNeeded(in: .current)
        provider.reset(startingAt: file.id, catalogAccess: access)
        let first = try XCTUnwrap(provider.entry(after: nil))
        XCTAssertEqual(first.path, "/music/f0.flac")

        try setAccount { $0.isSubscribed = false }  // after the session started, before its first catalog entry
        let second = try XCTUnwrap(provider.entry(after: first.token))
        guard case .unplayable(let reason) = second.source else { return XCTFail("\(second.source)") }
        XCTAssertTrue(reason.contains("no subscription"), reason)

        try setAccount { $0.isSubscribed = true }  // decided once per session
        XCTAssertEqual(access.value, .denied(reason: "this account cannot play it (no subscription: "
                                             + "MusicSubscription.canPlayCatalogContent is false)"))
        let third = try XCTUnwrap(provider.entry(after: second.token))
        guard case .unplayable(let thirdReason) = third.source else { return XCTFail("\(third.source)") }
        XCTAssertTrue(thirdReason.contains("no subscription"), thirdReason)
    }

    func testEntryIDsAreTheSerialInHexWithAtLeastEightDigits() {
        XCTAssertEqual(MusicPlayer.Queue.Entry.id(forSerial: 0x2A), "E0000002A")
        XCTAssertEqual(MusicPlayer.Queue.Entry.id(forSerial: 0xFFFF_FFFF), "EFFFFFFFF")
        XCTAssertEqual(MusicPlayer.Queue.Entry.id(forSerial: 0x1_2345_6789), "E123456789")
    }
}

/// A catalog document with one long playlist of generated songs (for lazy-queue tests).
enum LongPlaylist {
    static let id: MusicItemID = "pl.long-test-playlist"

    static func songID(_ index: Int) -> String { "99\(String(format: "%08d", index))" }

    static func write(trackCount: Int, into directory: URL, previewPath: String) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var songs: [String] = []
        var tracks: [String] = []
        songs.reserveCapacity(trackCount)
        for index in 0..<trackCount {
            let id = songID(index)
            songs.append("""
                {"id":"\(id)","type":"songs","attributes":{"name":"Song \(index)","artistName":"Long Artist",\
                "albumName":"Long Album","durationInMillis":1000,"playParams":{"id":"\(id)","kind":"song"},\
                "previews":[{"url":"file://\(previewPath)"}]}}
                """)
            tracks.append("{\"id\":\"\(id)\",\"type\":\"songs\"}")
        }
        let playlist = """
            {"id":"\(id.rawValue)","type":"playlists","attributes":{"name":"Long Playlist","curatorName":"Tests",\
            "playParams":{"id":"\(id.rawValue)","kind":"playlist"}},"relationships":{"tracks":{"data":[\(tracks.joined(separator: ","))]}}}
            """
        let document = "{\"storefront\":\"us\",\"data\":[\(songs.joined(separator: ",")),\(playlist)]}"
        try Data(document.utf8).write(to: directory.appendingPathComponent("long-playlist.json"))
    }
}
