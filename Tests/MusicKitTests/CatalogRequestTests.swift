import Foundation
@testable import MusicKitCore
import XCTest

/// The talk's catalog request, verbatim (WWDC 2026 session 254, 18:58): it must compile
/// unchanged against this framework.
func fetchSongs(songIDs: [MusicItemID]) async throws -> (featured: Song?, other: [Song]) {
    var request = MusicCatalogResourceRequest<Song>(matching: \.id, memberOf: songIDs)
    request.options = [.findEquivalents]

    let response = try await request.response()

    let featuredSongID = songIDs[0]
    let featuredSong = response.item(for: featuredSongID)

    let others: [Song] = songIDs[1...].compactMap { songID in
        return response.item(for: songID)
    }

    return (featuredSong, others)
}

/// Catalog requests against the bundled catalog (Assets/Catalog), imported into SQLite.
final class CatalogRequestTests: XCTestCase {
    override func setUpWithError() throws {
        try useTemporaryEnvironment(self)
    }

    func testTheTalksFetchSongsReturnsTheFeaturedSongAndTheOthersInOrder() async throws {
        let ids = [BundledCatalog.ezerEv, BundledCatalog.escapeFromChaoslandUS, BundledCatalog.mediaThreat]
        let (featured, others) = try await fetchSongs(songIDs: ids)
        XCTAssertEqual(featured?.id, BundledCatalog.ezerEv)
        XCTAssertEqual(featured?.title, "Ezer Év")
        XCTAssertEqual(featured?.artistName, "Obsidian Shell")
        XCTAssertEqual(others.map(\.title), ["Escape from Chaosland", "Media Threat"])
        XCTAssertEqual(featured?.previewAssets?.first?.url?.isFileURL, true, "previews are the bundled files")
        XCTAssertTrue(FileManager.default.fileExists(atPath: featured!.previewAssets!.first!.url!.path))
    }

    func testFetchSongsAcrossStorefrontsGivesTheLocalEquivalents() async throws {
        try setAccount { $0.storefront = "gb" }
        // IDs from the us storefront: the Sectoid song has another ID in gb, "Media Threat" is not there.
        let ids = [BundledCatalog.escapeFromChaoslandUS, BundledCatalog.ezerEv, BundledCatalog.mediaThreat]
        let (featured, others) = try await fetchSongs(songIDs: ids)
        XCTAssertEqual(featured?.id, BundledCatalog.escapeFromChaoslandGB, "answered by the gb ID")
        XCTAssertEqual(featured?.title, "Escape from Chaosland")
        XCTAssertEqual(others.map(\.id), [BundledCatalog.ezerEv], "the song missing in gb is left out, not an error")
    }

    func testWithoutFindEquivalentsAnotherStorefrontsIDIsAbsent() async throws {
        try setAccount { $0.storefront = "gb" }
        let request = MusicCatalogResourceRequest<Song>(matching: \.id, memberOf: [BundledCatalog.escapeFromChaoslandUS,
                                                                                  BundledCatalog.ezerEv])
        let response = try await request.response()
        XCTAssertNil(response.item(for: BundledCatalog.escapeFromChaoslandUS))
        XCTAssertEqual(response.items.map(\.id), [BundledCatalog.ezerEv])
    }

    func testExplicitSongBecomesItsCleanEquivalentWhenExplicitContentIsOff() async throws {
        let explicit = try await MusicCatalogResourceRequest<Song>(matching: \.id, equalTo: BundledCatalog.wingsOfCruelty).response()
        XCTAssertEqual(explicit.items.first?.contentRating, .explicit, "allowed by default")

        try setAccount { $0.allowsExplicitContent = false }
        let plain = try await MusicCatalogResourceRequest<Song>(matching: \.id, equalTo: BundledCatalog.wingsOfCruelty).response()
        XCTAssertTrue(plain.items.isEmpty, "explicit items are left out without findEquivalents")

        var request = MusicCatalogResourceRequest<Song>(matching: \.id, equalTo: BundledCatalog.wingsOfCruelty)
        request.options = [.findEquivalents]
        let response = try await request.response()
        let clean = try XCTUnwrap(response.item(for: BundledCatalog.wingsOfCruelty))
        XCTAssertEqual(clean.id, BundledCatalog.wingsOfCrueltyClean)
        XCTAssertEqual(clean.contentRating, .clean)
        XCTAssertEqual(clean.title, "Wings of Cruelty (Clean)")

        // Apple's 26.4 shape: an array of `MusicCatalogResourceRequestOption`s.
        var spelledOut = MusicCatalogResourceRequest<Song>(matching: \.id, equalTo: BundledCatalog.wingsOfCruelty)
        spelledOut.options.append(MusicCatalogResourceRequestOption.findEquivalents)
        XCTAssertEqual(spelledOut.options, [.findEquivalents])
        XCTAssertEqual("\(MusicCatalogResourceRequestOption.findEquivalents)", "findEquivalents")
        let spelledOutResponse = try await spelledOut.response()
        XCTAssertEqual(spelledOutResponse.items.first?.id, BundledCatalog.wingsOfCrueltyClean)
    }

    func testUnknownIDsAreAbsentNotAnError() async throws {
        let request = MusicCatalogResourceRequest<Album>(matching: \.id, memberOf: ["0", BundledCatalog.elysia, "nope"])
        let response = try await request.response()
        XCTAssertEqual(response.items.map(\.title), ["Elysia"])
        XCTAssertNil(response.item(for: "nope"))
    }

    func testFilterByISRCAndUPC() async throws {
        let byISRC = try await MusicCatalogResourceRequest<Song>(matching: \.isrc, equalTo: "XXOMK0800001").response()
        XCTAssertEqual(byISRC.items.map(\.id), [BundledCatalog.ezerEv])
        let elysia = try await MusicCatalogResourceRequest<Album>(matching: \.id, equalTo: BundledCatalog.elysia).response()
        let upc = try XCTUnwrap(elysia.items.first?.upc)
        let byUPC = try await MusicCatalogResourceRequest<Album>(matching: \.upc, equalTo: upc).response()
        XCTAssertEqual(byUPC.items.map(\.id), [BundledCatalog.elysia])
    }

    func testRelationshipsAreNilUntilRequested() async throws {
        let plain = try await MusicCatalogResourceRequest<Album>(matching: \.id, equalTo: BundledCatalog.elysia).response()
        let album = try XCTUnwrap(plain.items.first)
        XCTAssertNil(album.tracks)
        XCTAssertNil(album.artists)

        var request = MusicCatalogResourceRequest<Album>(matching: \.id, equalTo: BundledCatalog.elysia)
        request.properties = [.tracks, .artists]
        let loaded = try await request.response().items.first
        XCTAssertEqual(loaded?.tracks?.map(\.title), ["Ezer Év", "Elveszett Lelkek", "Vérmocsár", "Megtört Álom"])
        XCTAssertEqual(loaded?.tracks?.first?.artistName, "Obsidian Shell", "related items come whole")
        XCTAssertEqual(loaded?.artists?.map(\.name), ["Obsidian Shell"])
        XCTAssertNil(loaded?.genres, "only what was asked for")
    }

    func testWithLoadsRelationshipsAndAssociations() async throws {
        let song = try await MusicCatalogResourceRequest<Song>(matching: \.id, equalTo: BundledCatalog.ezerEv).response().items[0]
        let detailed = try await song.with([.artists, .albums, .genres])
        XCTAssertEqual(detailed.artists?.first?.name, "Obsidian Shell")
        XCTAssertEqual(detailed.albums?.first?.title, "Elysia")
        XCTAssertEqual(detailed.genres?.map(\.name), ["Metal"])

        let artist = try await MusicCatalogResourceRequest<Artist>(matching: \.id, equalTo: BundledCatalog.maxstack).response().items[0]
        XCTAssertNil(artist.topSongs)
        let full = try await artist.with(.albums, .topSongs, .latestRelease)
        XCTAssertEqual(full.albums?.count, 3)
        XCTAssertEqual(full.topSongs?.count, 5)
        XCTAssertEqual(full.topSongs?.title, "Top Songs")
        XCTAssertEqual(full.latestRelease?.title, "Endgame: Singularity (Advanced Research)")

        let album = try await MusicCatalogResourceRequest<Album>(matching: \.id, equalTo: BundledCatalog.advancedResearch).response().items[0]
        let versions = try await album.with([.otherVersions, .relatedAlbums])
        XCTAssertEqual(versions.otherVersions?.map(\.id), [BundledCatalog.gaplessAlbum])
        XCTAssertEqual(Set(versions.relatedAlbums?.map(\.title) ?? []),
                       ["Endgame: Singularity Original Soundtrack", "Through Space (gapless excerpt)"])
    }

    /// A property is its item type's: `Song.artists` and `Album.artists` differ as
    /// `AnyMusicProperty` values; each says what it is.
    func testPropertiesOfDifferentItemTypesDiffer() {
        let songArtists: AnyMusicProperty = PartialMusicProperty<Song>.artists
        let albumArtists: AnyMusicProperty = PartialMusicProperty<Album>.artists
        XCTAssertNotEqual(songArtists, albumArtists)
        XCTAssertEqual(songArtists, PartialMusicProperty<Song>.artists as AnyMusicProperty)
        XCTAssertEqual(Set([songArtists, albumArtists, PartialMusicProperty<Song>.artists]).count, 2)
        XCTAssertEqual(PartialMusicProperty<Album>.tracks.description, "Album.tracks (relationship to Track)")
        XCTAssertEqual(PartialMusicProperty<Song>.artistURL.description, "Song.artistURL (extended attribute, URL)")
    }

    func testPlaylistEntriesAndTracks() async throws {
        let search = try await MusicCatalogSearchRequest(term: "heavy rotation", types: [Playlist.self]).response()
        let playlist = try XCTUnwrap(search.playlists.first)
        XCTAssertEqual(playlist.name, "Heavy Rotation")
        XCTAssertNil(playlist.entries)
        let loaded = try await playlist.with([.entries, .tracks, .curator])
        XCTAssertEqual(loaded.entries?.count, 6)
        XCTAssertEqual(loaded.entries?.map(\.position), [0, 1, 2, 3, 4, 5])
        XCTAssertEqual(loaded.entries?.first?.title, "Ezer Év")
        XCTAssertEqual(loaded.tracks?.count, 6)
        XCTAssertEqual(loaded.curator?.name, "OpenMusicKit Editors")
    }

    /// Bundled artwork at a size is a PNG of that size, scaled once into the data folder's cache.
    func testArtworkURLIsTheBundledImageScaledOnceToTheSize() async throws {
        let album = try await MusicCatalogResourceRequest<Album>(matching: \.id, equalTo: BundledCatalog.elysia).response().items[0]
        let artwork = try XCTUnwrap(album.artwork)
        XCTAssertEqual(artwork.maximumWidth, 600)
        XCTAssertEqual(artwork.backgroundColor, CGColor(hex: "3a0f2e"))
        let url = try XCTUnwrap(artwork.url(width: 200, height: 120))
        XCTAssertTrue(url.isFileURL)
        XCTAssertEqual(url.deletingLastPathComponent().path, ArtworkCache.directory().path)
        let image = try RGBAImage(pngFile: url.path)
        XCTAssertEqual([image.width, image.height], [200, 120])
        let original = try RGBAImage(pngFile: XCTUnwrap(MusicKitEnvironment.bundledAssets()).appendingPathComponent("Artwork/elysia.png").path)
        XCTAssertEqual(image.averageColour.red, original.averageColour.red, accuracy: 3, "the same picture, smaller")

        let written = try FileManager.default.attributesOfItem(atPath: url.path)[.modificationDate] as? Date
        try await Task.sleep(for: .milliseconds(20))
        XCTAssertEqual(artwork.url(width: 200, height: 120), url, "the same file for the same size")
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: url.path)[.modificationDate] as? Date, written, "not made again")
        XCTAssertNotEqual(artwork.url(width: 64, height: 64), url, "another size, another file")
    }

    func testTopLevelGenres() async throws {
        let response = try await MusicCatalogResourceRequest<Genre>().response()
        XCTAssertEqual(Set(response.items.map(\.name)), ["Metal", "Electronic", "Rock", "Music"])
        XCTAssertEqual(response.items.first { $0.name == "Rock" }?.parent?.name, "Music")
    }

    func testLimitCapsTheItems() async throws {
        var request = MusicCatalogResourceRequest<Song>(matching: \.id, memberOf: [BundledCatalog.ezerEv, BundledCatalog.mediaThreat])
        request.limit = 1
        let response = try await request.response()
        XCTAssertEqual(response.items.count, 1)
    }
}
