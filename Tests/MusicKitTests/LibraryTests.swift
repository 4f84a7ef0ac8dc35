import AudioEngine
import AudioMeasurement
import AudioTestSupport
import Foundation
@testable import MusicKitCore
import XCTest

/// The person's library: scanning files, requests over it, adding catalog items, playlists.
final class LibraryTests: XCTestCase {
    private var environment: MusicKitEnvironment!
    private var music: URL!

    override func setUpWithError() throws {
        environment = try useTemporaryEnvironment(self, applicationIdentifier: "library-tests")
        try MusicAuthorizationSettings.set(.authorized, for: "library-tests")
        music = environment.configDirectory.deletingLastPathComponent().appendingPathComponent("Music")
        try FileManager.default.createDirectory(at: music, withIntermediateDirectories: true)
        try MusicLibraryScanner.setFolders([music])
    }

    private func song(_ name: String, title: String, artist: String, album: String, track: Int, genre: String = "Rock") throws {
        let samples = [Float](repeating: 0.25, count: 4_410 * 2)
        let writer = try AudioFileWriter(path: music.appendingPathComponent(name).path, format: .flac16, sampleRate: 44_100,
                                         channelCount: 2, tags: .init(title: title, artist: artist, album: album, genre: genre,
                                                                      trackNumber: track))
        try writer.write(samples)
        try writer.close()
    }

    private func addSomeSongs() throws {
        try song("a1.flac", title: "Zephyr", artist: "The Breeze", album: "Weather", track: 2)
        try song("a2.flac", title: "Arctic", artist: "The Breeze", album: "Weather", track: 1)
        try song("b1.flac", title: "Lantern", artist: "Éclair", album: "Night Lights", track: 1, genre: "Jazz")
    }

    func testScanReadsTagsListsUnreadableFilesAndIsIncremental() throws {
        try addSomeSongs()
        try Data("not audio".utf8).write(to: music.appendingPathComponent("notes.ogg"))
        let first = try MusicLibraryScanner.scan()
        XCTAssertEqual(first.filesSeen, 4)
        XCTAssertEqual(first.added, 3)
        XCTAssertEqual(first.skipped.map(\.path), [music.appendingPathComponent("notes.ogg").path])
        XCTAssertTrue(first.skipped[0].reason.contains("corrupt"), first.skipped[0].reason)

        let second = try MusicLibraryScanner.scan()
        XCTAssertEqual(second.unchanged, 4, "nothing re-read")
        XCTAssertEqual(second.added + second.updated + second.removed, 0)

        try FileManager.default.removeItem(at: music.appendingPathComponent("a1.flac"))
        usleep(10_000)
        try song("a2.flac", title: "Arctic (Remix)", artist: "The Breeze", album: "Weather", track: 1)
        let third = try MusicLibraryScanner.scan()
        XCTAssertEqual(third.removed, 1)
        XCTAssertEqual(third.updated, 1)
        XCTAssertEqual(third.unchanged, 2)
    }

    /// A file cut short is skipped with the reason (issue #44: a truncated FLAC was taken as a
    /// good song of its declared length), and a rescan counts removed songs, not the skipped
    /// files that went with them (it said "3 removed" for 2 songs and 1 skipped file).
    func testATruncatedFileIsSkippedAndRemovedCountsSongs() throws {
        let samples = (0..<88_200).flatMap { frame -> [Float] in
            let value = Float(0.4 * sin(2 * Double.pi * 440 * Double(frame) / 44_100))
            return [value, value]
        }
        let whole = music.appendingPathComponent("whole.flac")
        let writer = try AudioFileWriter(path: whole.path, format: .flac16, sampleRate: 44_100, channelCount: 2,
                                         tags: .init(title: "Whole", artist: "Cutter"))
        try writer.write(samples)
        try writer.close()
        let cut = music.appendingPathComponent("cut.flac")
        let bytes = try Data(contentsOf: whole)
        try bytes.prefix(bytes.count * 6 / 10).write(to: cut)
        try addSomeSongs()
        let first = try MusicLibraryScanner.scan()
        XCTAssertEqual(first.skipped.map(\.path), [cut.path], "the whole one and the three others are songs")
        XCTAssertEqual(first.added, 4)

        try FileManager.default.removeItem(at: cut)
        try FileManager.default.removeItem(at: music.appendingPathComponent("a1.flac"))
        try FileManager.default.removeItem(at: music.appendingPathComponent("b1.flac"))
        let second = try MusicLibraryScanner.scan()
        XCTAssertEqual(second.removed, 2, "two songs; the skipped file is forgotten without counting")
        XCTAssertEqual(second.skipped.count, 0)
    }

    func testAScannedSongWithoutATitleTagIsNamedAfterItsFile() async throws {
        let writer = try AudioFileWriter(path: music.appendingPathComponent("07 - Untagged.Take 2.flac").path, format: .flac16,
                                         sampleRate: 44_100, channelCount: 2, tags: .init(artist: "Nobody"))
        try writer.write([Float](repeating: 0.25, count: 4_410 * 2))
        try writer.close()
        _ = try MusicLibraryScanner.scan()
        let songs = try await MusicLibraryRequest<Song>().response().items
        XCTAssertEqual(songs.map(\.title), ["07 - Untagged.Take 2"], "the file's name without its extension")
    }

    func testLibraryRequestsFilterSortAndPage() async throws {
        try addSomeSongs()
        _ = try MusicLibraryScanner.scan()
        var request = MusicLibraryRequest<Song>()
        request.sort(by: \.title, ascending: true)
        let all = try await request.response().items
        XCTAssertEqual(all.map(\.title), ["Arctic", "Lantern", "Zephyr"])
        XCTAssertEqual(all.first?.artistName, "The Breeze")
        XCTAssertEqual(all.first?.albumTitle, "Weather")
        XCTAssertEqual(all.first?.trackNumber, 1)
        XCTAssertEqual(all.first?.duration ?? 0, 0.1, accuracy: 0.001)
        XCTAssertEqual(all.first?.playParameters?.isLibrary, true)

        var byArtist = MusicLibraryRequest<Song>()
        byArtist.filter(matching: \.artistName, equalTo: "the breeze")
        byArtist.sort(by: \.trackNumber, ascending: false)
        let found1 = try await byArtist.response().items.map(\.title)
        XCTAssertEqual(found1, ["Zephyr", "Arctic"])

        var text = MusicLibraryRequest<Song>()
        text.filter(text: "eclair")
        let found2 = try await text.response().items.map(\.title)
        XCTAssertEqual(found2, ["Lantern"], "accents do not matter")

        var contains = MusicLibraryRequest<Song>()
        contains.filter(matching: \.title, contains: "PHY")
        let found3 = try await contains.response().items.map(\.title)
        XCTAssertEqual(found3, ["Zephyr"])

        var paged = MusicLibraryRequest<Song>()
        paged.sort(by: \.title, ascending: false)
        paged.limit = 1
        paged.offset = 1
        let found4 = try await paged.response().items.map(\.title)
        XCTAssertEqual(found4, ["Lantern"])

        var members = MusicLibraryRequest<Song>()
        members.filter(matching: \.id, memberOf: [all[0].id, all[2].id])
        let found5 = try await members.response().items.map(\.id)
        XCTAssertEqual(Set(found5), [all[0].id, all[2].id])

        let albums = try await MusicLibraryRequest<Album>().response().items
        XCTAssertEqual(Set(albums.map(\.title)), ["Weather", "Night Lights"])
        XCTAssertEqual(albums.first { $0.title == "Weather" }?.trackCount, 2)
        XCTAssertEqual(albums.first { $0.title == "Weather" }?.tracks?.map(\.title), ["Arctic", "Zephyr"])
        var artists = MusicLibraryRequest<Artist>()
        artists.sort(by: \.name, ascending: true)
        let found6 = try await artists.response().items
        XCTAssertEqual(found6.map(\.name), ["Éclair", "The Breeze"])
        XCTAssertEqual(found6.map { $0.genreNames ?? [] }, [["Jazz"], ["Rock"]], "an artist's genres are its songs'")
        var inGenre = MusicLibraryRequest<Song>()
        let jazz = try await MusicLibraryRequest<Genre>().response().items.first { $0.name == "Jazz" }
        inGenre.filter(matching: \.genres, contains: try XCTUnwrap(jazz))
        let found7 = try await inGenre.response().items.map(\.title)
        XCTAssertEqual(found7, ["Lantern"])
    }

    /// A term across types: every word must match a name, artist or album; whole names and
    /// name prefixes rank first; top results mix the types by that rank.
    func testLibrarySearchFindsAcrossTypesAndRanksNamesFirst() async throws {
        try addSomeSongs()
        try song("c1.flac", title: "Weathervane", artist: "Gusts", album: "Vanes", track: 1)
        _ = try MusicLibraryScanner.scan()
        var request = MusicLibrarySearchRequest(term: "weather", types: [Song.self, Album.self, Artist.self])
        request.includeTopResults = true
        let response = try await request.response()
        XCTAssertEqual(response.songs.map(\.title), ["Weathervane", "Arctic", "Zephyr"], "a name match before album matches")
        XCTAssertEqual(response.albums.map(\.title), ["Weather"])
        XCTAssertTrue(response.artists.isEmpty)
        XCTAssertEqual(response.topResults.first.map { "\($0.title)" }, "Weather", "the whole name first")
        guard case .album? = response.topResults.first else { return XCTFail("\(response.topResults)") }
        XCTAssertEqual(response.topResults.count, 4)

        let accents = try await MusicLibrarySearchRequest(term: "eclair night", types: [Song.self]).response()
        XCTAssertEqual(accents.songs.map(\.title), ["Lantern"], "every word, accents folded")
        var limited = MusicLibrarySearchRequest(term: "the breeze", types: [Song.self])
        limited.limit = 1
        let one = try await limited.response()
        XCTAssertEqual(one.songs.count, 1)
        XCTAssertTrue(one.topResults.isEmpty, "top results only when asked")
    }

    /// Songs grouped by artist, album, genre and first letter; filters on the items and on
    /// the sections; sections without items left out; limit pages the sections.
    func testSectionedRequestsGroupSongsByArtistAlbumGenreAndLetter() async throws {
        try addSomeSongs()
        _ = try MusicLibraryScanner.scan()
        let byArtist = try await MusicLibrarySectionedRequest<Artist, Song>().response().sections
        XCTAssertEqual(byArtist.map(\.name), ["Éclair", "The Breeze"], "the section's properties, by dynamic member")
        XCTAssertEqual(byArtist.map { $0.items.map(\.title) }, [["Lantern"], ["Arctic", "Zephyr"]])

        let byAlbum = try await MusicLibrarySectionedRequest<Album, Song>().response().sections
        XCTAssertEqual(byAlbum.map(\.title), ["Night Lights", "Weather"])
        XCTAssertEqual(byAlbum.last?.items.map(\.title), ["Arctic", "Zephyr"], "track order in an album")

        let byLetter = try await MusicLibrarySectionedRequest<TitledSection, Song>().response().sections
        XCTAssertEqual(byLetter.map(\.title), ["A", "L", "Z"])
        XCTAssertEqual(byLetter.map(\.id), ["A", "L", "Z"])

        var jazz = MusicLibrarySectionedRequest<Genre, Song>()
        jazz.filterSections(matching: \.name, contains: "jaz")
        let jazzSections = try await jazz.response().sections
        XCTAssertEqual(jazzSections.map(\.name), ["Jazz"])
        XCTAssertEqual(jazzSections.first?.items.map(\.title), ["Lantern"])

        var filtered = MusicLibrarySectionedRequest<Artist, Song>()
        filtered.filterItems(text: "arc")
        filtered.sortSections(by: \.name, ascending: false)
        let filteredSections = try await filtered.response().sections
        XCTAssertEqual(filteredSections.map(\.name), ["The Breeze"], "a section without matching items is left out")
        XCTAssertEqual(filteredSections.first?.items.map(\.title), ["Arctic"])

        var reversed = MusicLibrarySectionedRequest<Artist, Song>()
        reversed.sortSections(by: \.name, ascending: false)
        reversed.sortItems(by: \.title, ascending: false)
        reversed.limit = 1
        let first = try await reversed.response().sections
        XCTAssertEqual(first.map(\.name), ["The Breeze"])
        XCTAssertEqual(first.first?.items.map(\.title), ["Zephyr", "Arctic"])
    }

    func testReadingTheLibraryNeedsAuthorization() async throws {
        try MusicAuthorizationSettings.set(.denied, for: "library-tests")
        do {
            _ = try await MusicLibraryRequest<Song>().response()
            XCTFail("expected permissionDenied")
        } catch let error as MusicLibrary.Error {
            XCTAssertEqual(error, .permissionDenied)
            XCTAssertTrue(error.description.contains("not authorized"))
        }
        XCTAssertThrowsError(try MusicLibraryScanner.scan())
    }

    func testCatalogItemsAddedToTheLibraryAndPlaylists() async throws {
        let songs = try await MusicCatalogResourceRequest<Song>(matching: \.id, memberOf: [BundledCatalog.ezerEv, BundledCatalog.mediaThreat]).response().items
        try await MusicLibrary.shared.add(songs[0])
        do {
            try await MusicLibrary.shared.add(songs[0])
            XCTFail("added twice")
        } catch MusicLibrary.Error.itemAlreadyAdded {}
        let library = try await MusicLibraryRequest<Song>().response().items
        XCTAssertEqual(library.map(\.title), ["Ezer Év"])
        XCTAssertEqual(library.first?.playParameters?.catalogID, BundledCatalog.ezerEv.rawValue, "points at the catalog song")
        XCTAssertNotNil(library.first?.libraryAddedDate)

        let playlist = try await MusicLibrary.shared.createPlaylist(name: "Workout", description: "Fast ones",
                                                                    authorDisplayName: "Cathy", items: [songs[0]])
        XCTAssertEqual(playlist.name, "Workout")
        XCTAssertEqual(playlist.standardDescription, "Fast ones")
        XCTAssertEqual(playlist.tracks?.map(\.title), ["Ezer Év"])
        let grown = try await MusicLibrary.shared.add(songs[1], to: playlist)
        XCTAssertEqual(grown.tracks?.map(\.title), ["Ezer Év", "Media Threat"])
        let renamed = try await MusicLibrary.shared.edit(grown, name: "Workout Mix")
        XCTAssertEqual(renamed.name, "Workout Mix")
        XCTAssertEqual(renamed.tracks?.count, 2, "items kept")
        let reordered = try await MusicLibrary.shared.edit(renamed, items: [songs[1]])
        XCTAssertEqual(reordered.tracks?.map(\.title), ["Media Threat"])
        var playlists = MusicLibraryRequest<Playlist>()
        playlists.filter(matching: \.name, contains: "mix")
        let found8 = try await playlists.response().items.map(\.id)
        XCTAssertEqual(found8, [playlist.id])
        let empty = try await MusicLibrary.shared.createPlaylist(name: "Empty")
        XCTAssertEqual(empty.tracks?.count, 0)

        // Apple's conformances of tracks and playlist entries (issue #43): each added as the
        // song it holds, to the library and to a playlist.
        let track = try XCTUnwrap(grown.tracks?.last)  // Media Threat
        try await MusicLibrary.shared.add(Track.song(songs[1]))
        let librarySongs = try await MusicLibraryRequest<Song>().response().items
        XCTAssertEqual(librarySongs.map(\.title).sorted(), ["Ezer Év", "Media Threat"])
        let entry = try XCTUnwrap(grown.entries?.first)  // Ezer Év
        let withEntry = try await MusicLibrary.shared.add(entry, to: empty)
        let withBoth = try await MusicLibrary.shared.add(track, to: withEntry)
        XCTAssertEqual(withBoth.tracks?.map(\.title), ["Ezer Év", "Media Threat"])
        let made = try await MusicLibrary.shared.createPlaylist(name: "From entries", items: grown.entries ?? [])
        XCTAssertEqual(made.tracks?.map(\.title), ["Ezer Év", "Media Threat"])

        // An album, or a playlist, added to a playlist adds its tracks, in order.
        let album = try await MusicCatalogResourceRequest<Album>(matching: \.id, equalTo: BundledCatalog.elysia).response().items[0]
        let albumTracks = try await album.with([.tracks]).tracks?.map(\.title) ?? []
        XCTAssertFalse(albumTracks.isEmpty)
        let withAlbum = try await MusicLibrary.shared.add(album, to: made)
        XCTAssertEqual(withAlbum.tracks?.map(\.title), ["Ezer Év", "Media Threat"] + albumTracks)
        let fromPlaylist = try await MusicLibrary.shared.createPlaylist(name: "Copy", items: [withAlbum])
        XCTAssertEqual(fromPlaylist.tracks?.map(\.title), withAlbum.tracks?.map(\.title), "a playlist's tracks")

        // A library request for playlist entries: those of the library's playlists, by ID too.
        let everyEntry = try await MusicLibraryRequest<Playlist.Entry>().response().items
        let expected = try await MusicLibraryRequest<Playlist>().response().items.flatMap { $0.entries?.map(\.title) ?? [] }
        XCTAssertEqual(everyEntry.map(\.title), Array(expected.prefix(25)), "playlist by playlist, the first page")
        var byID = MusicLibraryRequest<Playlist.Entry>()
        byID.filter(matching: \.id, equalTo: BundledCatalog.mediaThreat)
        let mediaThreat = try await byID.response().items
        XCTAssertFalse(mediaThreat.isEmpty)
        XCTAssertTrue(mediaThreat.allSatisfy { $0.title == "Media Threat" }, "\(mediaThreat)")
        XCTAssertEqual(mediaThreat.count, expected.filter { $0 == "Media Threat" }.count, "once for each playlist holding it")
    }

    /// An iTunes-style `.m4a` (ALAC, tags and cover inside) and a FLAC album with a `cover.jpg`
    /// beside it: both scanned with their tags and artwork, which scales (PNG and JPEG) like
    /// the catalog's.
    func testMP4FilesAndFolderCoversGiveTheLibraryItsArtwork() async throws {
        let assets = try XCTUnwrap(MusicKitEnvironment.bundledAssets())
        let png = assets.appendingPathComponent("Artwork/angelic-asylum.png")
        let flac = music.appendingPathComponent("source.flac")
        try writeAudioFile(flac, TestSignal.sweep(frames: 4_410))
        let m4a = music.appendingPathComponent("itunes.m4a")
        try encodeWithFFmpeg(flac, to: m4a, codec: "alac", inputs: ["-i", png.path], arguments: [
            "-map", "0:a", "-map", "1:v", "-c:v", "copy", "-disposition:v", "attached_pic",
            "-metadata", "title=Halo", "-metadata", "artist=Ripper", "-metadata", "album=Ripped", "-metadata", "track=4/12",
        ])
        try FileManager.default.removeItem(at: flac)
        let album = music.appendingPathComponent("Album")
        try FileManager.default.createDirectory(at: album, withIntermediateDirectories: true)
        try song("Album/1.flac", title: "Folder Song", artist: "Folks", album: "Folder", track: 1)
        let jpeg = album.appendingPathComponent("Cover.jpg")
        XCTAssertEqual(try runTool("/usr/bin/ffmpeg", ["-nostdin", "-loglevel", "error", "-i", png.path, "-q:v", "3", jpeg.path],
                                   environment: [:]).code, 0)

        let scanned = try MusicLibraryScanner.scan()
        XCTAssertEqual(scanned.added, 2, "\(scanned.skipped)")
        var request = MusicLibraryRequest<Song>()
        request.sort(by: \.title, ascending: true)
        let songs = try await request.response().items
        XCTAssertEqual(songs.map(\.title), ["Folder Song", "Halo"])
        let ripped = songs[1]
        XCTAssertEqual([ripped.artistName, ripped.albumTitle], ["Ripper", "Ripped"])
        XCTAssertEqual(ripped.trackNumber, 4)
        XCTAssertEqual(ripped.duration ?? 0, 0.1, accuracy: 0.001)

        let embedded = try XCTUnwrap(ripped.artwork)
        XCTAssertEqual([embedded.maximumWidth, embedded.maximumHeight], [600, 600])
        let kept = try FileManager.default.contentsOfDirectory(at: LibraryArtwork.directory(environment), includingPropertiesForKeys: nil)
        XCTAssertEqual(kept.count, 1)
        XCTAssertEqual(try Data(contentsOf: kept[0]), try Data(contentsOf: png), "the cover kept as it was stored in the file")

        let folder = try XCTUnwrap(songs[0].artwork)
        XCTAssertEqual([folder.maximumWidth, folder.maximumHeight], [600, 600], "the JPEG's size, from its header")
        // Both scale through the artwork cache; the JPEG (decoded by FFmpeg) looks like the PNG it was made from.
        let fromPNG = try RGBAImage(pngFile: try XCTUnwrap(embedded.url(width: 32, height: 32)).path)
        let fromJPEG = try RGBAImage(pngFile: try XCTUnwrap(folder.url(width: 32, height: 32)).path)
        XCTAssertEqual([fromJPEG.width, fromJPEG.height], [32, 32])
        let difference = zip(fromPNG.pixels, fromJPEG.pixels).map { abs(Int($0) - Int($1)) }.reduce(0, +) / fromPNG.pixels.count
        XCTAssertLessThan(difference, 12, "mean difference per channel between the PNG and its JPEG")

        var albums = MusicLibraryRequest<Album>()
        albums.filter(matching: \.title, equalTo: "Folder")
        let folderAlbum = try await albums.response().items.first
        XCTAssertEqual(folderAlbum?.artwork?.maximumWidth, 600, "an album has its songs' artwork")
    }

    /// What libsndfile does not read, read through FFmpeg in the scan (issue #44): a
    /// compilation's album artist groups its songs by different artists into one album, in disc
    /// then track order, and a FLAC's embedded picture is its artwork.
    func testACompilationIsOneAlbumByItsAlbumArtistInDiscOrderWithItsEmbeddedCover() async throws {
        let assets = try XCTUnwrap(MusicKitEnvironment.bundledAssets())
        let png = assets.appendingPathComponent("Artwork/angelic-asylum.png")
        let songs = [("a.flac", "Closing", "Artist A", 2, 1), ("b.flac", "Opening", "Artist B", 1, 1), ("c.flac", "Middle", "Artist A", 1, 2)]
        for (index, song) in songs.enumerated() {
            let plain = environment.configDirectory.appendingPathComponent("plain\(index).flac")
            try writeAudioFile(plain, TestSignal.sweep(frames: 4_410))
            try encodeWithFFmpeg(plain, to: music.appendingPathComponent(song.0), codec: "copy",
                                 inputs: index == 0 ? ["-i", png.path] : [],
                                 arguments: (index == 0 ? ["-map", "0:a", "-map", "1:v", "-c:v", "copy", "-disposition:v", "attached_pic"] : [])
                                    + ["-metadata", "title=\(song.1)", "-metadata", "artist=\(song.2)", "-metadata", "album=Hits",
                                       "-metadata", "album_artist=Various Artists", "-metadata", "disc=\(song.3)/2",
                                       "-metadata", "track=\(song.4)"])
        }
        let scanned = try MusicLibraryScanner.scan()
        XCTAssertEqual(scanned.added, 3, "\(scanned.skipped)")

        let albums = try await MusicLibraryRequest<Album>().response().items
        XCTAssertEqual(albums.map(\.title), ["Hits"], "one album, not one per artist")
        XCTAssertEqual(albums.first?.artistName, "Various Artists")
        let album = try await XCTUnwrap(albums.first).with([.tracks])
        XCTAssertEqual(album.tracks?.map(\.title), ["Opening", "Middle", "Closing"], "disc 1 tracks 1–2, then disc 2")
        let byAlbum = try await MusicLibrarySectionedRequest<Album, Song>().response().sections
        XCTAssertEqual(byAlbum.map { $0.items.map(\.title) }, [["Opening", "Middle", "Closing"]])

        var request = MusicLibraryRequest<Song>()
        request.sort(by: \.title, ascending: true)
        let library = try await request.response().items
        XCTAssertEqual(library.map(\.discNumber), [2, 1, 1])
        XCTAssertEqual(library.first?.artwork?.maximumWidth, 600, "the FLAC's PICTURE block")
        XCTAssertNil(library.last?.artwork, "no picture, no folder cover")
        let found = try await MusicLibrarySearchRequest(term: "various", types: [Song.self]).response().songs
        XCTAssertEqual(found.count, 3, "the album artist is searched too")
    }

    /// A library of an earlier schema (2: no artwork; 3: no album artist or disc) keeps its
    /// playlists, and its files are read again for what it lacked at the next scan.
    func testALibraryOfAnEarlierSchemaIsMigratedNotMovedAside() async throws {
        try addSomeSongs()
        _ = try MusicLibraryScanner.scan()
        _ = try await MusicLibrary.shared.createPlaylist(name: "Kept")
        let path = environment.dataDirectory.appendingPathComponent("library.sqlite")
        for (version, dropped) in [("2", ["artwork", "album_artist", "disc"]), ("3", ["album_artist", "disc"])] {
            MusicLibraryService.reset()
            do {
                let database = try SQLiteDatabase(path: path.path)
                try database.execute(dropped.map { "ALTER TABLE files DROP COLUMN \($0);" }.joined()
                                     + "UPDATE meta SET value = '\(version)' WHERE key = 'schema'")
            }
            let service = try MusicLibraryService.open()
            XCTAssertNil(service.problem, "schema \(version): not moved aside")
            let playlists = try await MusicLibraryRequest<Playlist>().response().items
            XCTAssertEqual(playlists.map(\.name), ["Kept"], "schema \(version)")
            let rescanned = try MusicLibraryScanner.scan()
            XCTAssertEqual(rescanned.updated, 3, "schema \(version): every file read again")
            let schema = try SQLiteDatabase(path: path.path).statement("SELECT value FROM meta WHERE key = 'schema'").rows { $0.string(0) }
            XCTAssertEqual(schema, [LibraryStore.schemaVersion], "schema \(version)")
        }
    }

    func testACorruptLibraryDatabaseIsKeptAsideAndReported() throws {
        try addSomeSongs()
        _ = try MusicLibraryScanner.scan()
        MusicLibraryService.reset()
        let database = environment.dataDirectory.appendingPathComponent("library.sqlite")
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database.path + suffix) }
        try Data(repeating: 0x42, count: 4_096).write(to: database)
        let service = try MusicLibraryService.open()
        let kept = try XCTUnwrap(service.problem?.keptAt)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: kept)), Data(repeating: 0x42, count: 4_096))
        let rescanned = try MusicLibraryScanner.scan()
        XCTAssertEqual(rescanned.added, 3, "the files come back with a scan")
    }
}
