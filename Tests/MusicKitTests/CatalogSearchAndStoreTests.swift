import AudioTestSupport
import Foundation
@testable import MusicKitCore
import XCTest

/// Search, charts, paging, and the catalog database's import and repair.
final class CatalogSearchAndStoreTests: XCTestCase {
    private var environment: MusicKitEnvironment!

    override func setUpWithError() throws {
        environment = try useTemporaryEnvironment(self)
    }

    func testAnImportedDocumentsRelativePreviewAndArtworkPointIntoItsOwnFolder() async throws {
        let source = try makeTemporaryDirectory(self)
        try FileManager.default.createDirectory(at: source.appendingPathComponent("media"), withIntermediateDirectories: true)
        try Data("clip".utf8).write(to: source.appendingPathComponent("media/clip.ogg"))
        let document = source.appendingPathComponent("mine.json")
        try Data(#"""
            {"storefront": "us", "data": [{"id": "900000002", "type": "songs", "attributes": {
              "name": "Relative", "artistName": "Me", "durationInMillis": 1000,
              "artwork": {"url": "media/cover-{w}x{h}.png", "width": 600, "height": 600},
              "previews": [{"url": "media/clip.ogg"}],
              "playParams": {"id": "900000002", "kind": "song"}}}]}
            """#.utf8).write(to: document)
        _ = try MusicCatalogIndex.importDocuments([document], environment: environment)
        let song = try await MusicCatalogResourceRequest<Song>(matching: \.id, equalTo: "900000002").response().items.first
        let preview = try XCTUnwrap(song?.previewAssets?.first?.url)
        XCTAssertEqual(preview.standardizedFileURL.path, source.appendingPathComponent("media/clip.ogg").standardizedFileURL.path,
                       "the preview is the file beside the document, not beside its copy")
        XCTAssertTrue(FileManager.default.fileExists(atPath: preview.path))
        let artwork = try XCTUnwrap(song?.artwork?.url(width: 100, height: 100))
        XCTAssertEqual(artwork.path, source.appendingPathComponent("media/cover-100x100.png").standardizedFileURL.path)
    }

    func testImportSaysWhatItSkippedOrReplacedAndCountsWhatItKept() async throws {
        let before = try MusicCatalogIndex.prepare(environment: environment).resourceCount
        let folder = try makeTemporaryDirectory(self)
        let document = folder.appendingPathComponent("notes.json")
        try Data(#"""
            {"storefront": "us", "data": [
              {"id": "p1", "type": "podcasts", "attributes": {"name": "Not Music"}},
              {"id": 900000010, "type": "songs", "attributes": {"name": "Numbered"}},
              {"id": "900000011", "type": "songs", "attributes": {"name": "Backwards", "durationInMillis": -5}},
              {"id": "900000012", "type": "songs"},
              {"id": "\#(BundledCatalog.ezerEv.rawValue)", "type": "songs", "attributes": {"name": "My Ezer", "artistName": "Me"}}
            ]}
            """#.utf8).write(to: document)
        let status = try MusicCatalogIndex.importDocuments([document], environment: environment)
        let notes = status.documentNotes.filter { $0.file == MusicCatalogService.userDocumentsDirectory(environment)
            .appendingPathComponent("notes.json").path }
        let paths = Set(notes.map(\.jsonPath))
        XCTAssertEqual(paths, ["data[0].type", "data[1].id", "data[2].attributes.durationInMillis", "data[3]", "data[4]"],
                       "\(notes)")
        XCTAssertTrue(notes.contains { $0.jsonPath == "data[0].type" && $0.reason.contains("unknown resource type \"podcasts\"") })
        XCTAssertTrue(notes.contains { $0.jsonPath == "data[4]" && $0.reason.contains("replaces us/songs/\(BundledCatalog.ezerEv.rawValue)") })
        XCTAssertEqual(status.resourceCount, before + 1, "only the numbered song is new; the replacement is not counted twice")
        let mine = try await MusicCatalogResourceRequest<Song>(matching: \.id, equalTo: BundledCatalog.ezerEv).response().items
        XCTAssertEqual(mine.first?.title, "My Ezer", "a person's document overrides the bundled one")
    }

    func testImportingAFolderSaysSoInsteadOfAnOpaqueError() throws {
        let folder = try makeTemporaryDirectory(self)
        XCTAssertThrowsError(try MusicCatalogIndex.importDocuments([folder], environment: environment)) { error in
            XCTAssertTrue("\(error)".contains("is a folder"), "\(error)")
        }
    }

    func testSearchFindsByTitleArtistAndAlbumIgnoringAccents() async throws {
        let byTitle = try await MusicCatalogSearchRequest(term: "vermocsar", types: [Song.self]).response()
        XCTAssertEqual(byTitle.songs.map(\.title), ["Vérmocsár"], "diacritics do not matter")
        let byArtist = try await MusicCatalogSearchRequest(term: "sectoid", types: [Song.self, Artist.self]).response()
        XCTAssertEqual(byArtist.songs.count, 4)
        XCTAssertEqual(byArtist.artists.map(\.name), ["Sectoid"])
        let byAlbum = try await MusicCatalogSearchRequest(term: "angelic asylum", types: [Album.self, Song.self]).response()
        XCTAssertEqual(byAlbum.albums.first?.title, "Angelic Asylum")
        XCTAssertEqual(byAlbum.songs.count, 5, "its four songs and the clean version of one")
    }

    func testSearchMatchesWordPrefixesAndRanksTitlesFirst() async throws {
        let response = try await MusicCatalogSearchRequest(term: "orbit", types: [Song.self]).response()
        XCTAssertEqual(response.songs.first?.title, "Orbital Elevator")
        let through = try await MusicCatalogSearchRequest(term: "through space", types: [Song.self]).response()
        XCTAssertEqual(through.songs.first?.title, "Through Space", "the title match before the album-name matches")
    }

    func testSearchPagesThroughNextBatch() async throws {
        var request = MusicCatalogSearchRequest(term: "obsidian", types: [Song.self])
        request.limit = 3
        let response = try await request.response()
        XCTAssertEqual(response.songs.count, 3)
        XCTAssertTrue(response.songs.hasNextBatch)
        var all = response.songs
        while all.hasNextBatch, let next = try await all.nextBatch() {
            all += next
        }
        XCTAssertEqual(all.count, 9, "8 Obsidian Shell songs and the clean version")
        XCTAssertEqual(Set(all.map(\.id)).count, 9, "no song twice")
        XCTAssertFalse(all.hasNextBatch)

        request.offset = 6
        let page = try await request.response()
        XCTAssertEqual(page.songs.map(\.id), Array(all.map(\.id)[6..<9]))
    }

    func testSearchWithTopResults() async throws {
        var request = MusicCatalogSearchRequest(term: "maxstack", types: [Artist.self, Album.self, Song.self])
        request.includeTopResults = true
        let response = try await request.response()
        guard case .artist(let artist)? = response.topResults.first else {
            return XCTFail("the artist comes first: \(response.topResults)")
        }
        XCTAssertEqual(artist.name, "Maxstack")
        XCTAssertGreaterThan(response.topResults.count, 2)
    }

    /// Suggestions while typing: names with a word starting with each word typed, those that
    /// start with the term first; the top results are the search's.
    func testSearchSuggestionsCompleteWhatIsTypedAndBringTopResults() async throws {
        let response = try await MusicCatalogSearchSuggestionsRequest(term: "orb").response()
        XCTAssertEqual(response.suggestions.first?.searchTerm, "orbital elevator")
        XCTAssertTrue(response.suggestions.allSatisfy { $0.searchTerm.split(separator: " ").contains { $0.hasPrefix("orb") } },
                      "\(response.suggestions)")
        XCTAssertEqual(Set(response.suggestions.map(\.id)).count, response.suggestions.count, "each term once")
        XCTAssertTrue(response.topResults.isEmpty, "no types for top results asked")

        var request = MusicCatalogSearchSuggestionsRequest(term: "maxst", includingTopResultsOfTypes: [Artist.self, Song.self])
        request.limit = 3
        let withTop = try await request.response()
        XCTAssertLessThanOrEqual(withTop.suggestions.count, 3)
        XCTAssertEqual(withTop.suggestions.first?.displayTerm, "maxstack")
        guard case .artist(let artist)? = withTop.topResults.first else { return XCTFail("\(withTop.topResults)") }
        XCTAssertEqual(artist.name, "Maxstack")
        let none = try await MusicCatalogSearchSuggestionsRequest(term: "zzqx").response()
        XCTAssertTrue(none.suggestions.isEmpty)
    }

    func testSearchLeavesOutExplicitItemsWhenTheAccountDoesNotAllowThem() async throws {
        let before = try await MusicCatalogSearchRequest(term: "wings of cruelty", types: [Song.self]).response()
        XCTAssertEqual(before.songs.count, 2)
        try setAccount { $0.allowsExplicitContent = false }
        let after = try await MusicCatalogSearchRequest(term: "wings of cruelty", types: [Song.self]).response()
        XCTAssertEqual(after.songs.map(\.title), ["Wings of Cruelty (Clean)"])
    }

    func testSearchAnswersFromTheAccountsStorefront() async throws {
        try setAccount { $0.storefront = "gb" }
        let response = try await MusicCatalogSearchRequest(term: "escape chaosland", types: [Song.self]).response()
        XCTAssertEqual(response.songs.first?.id, BundledCatalog.escapeFromChaoslandGB)
        let missing = try await MusicCatalogSearchRequest(term: "media threat", types: [Song.self]).response()
        XCTAssertTrue(missing.songs.isEmpty)
    }

    func testSearchTermsWithQuerySyntaxAreTakenLiterally() async throws {
        let response = try await MusicCatalogSearchRequest(term: "\"NEAR( * AND OR", types: [Song.self]).response()
        XCTAssertTrue(response.songs.isEmpty)
        let empty = try await MusicCatalogSearchRequest(term: "  ", types: [Song.self]).response()
        XCTAssertTrue(empty.songs.isEmpty)
    }

    func testChartsOfTheStorefront() async throws {
        let response = try await MusicCatalogChartsRequest(types: [Song.self, Album.self, Playlist.self]).response()
        let songs = try XCTUnwrap(response.songCharts.first)
        XCTAssertEqual(songs.title, "Top Songs")
        XCTAssertEqual(songs.kind, .mostPlayed)
        XCTAssertEqual(songs.items.count, 20, "the default limit")
        XCTAssertEqual(response.albumCharts.first?.items.count, 6)
        XCTAssertEqual(response.playlistCharts.first?.items.count, 4)

        try setAccount { $0.storefront = "gb" }
        let gb = try await MusicCatalogChartsRequest(types: [Song.self]).response()
        XCTAssertNotEqual(gb.songCharts.first?.items.map(\.title), songs.items.map(\.title), "each storefront has its own chart")
    }

    func testChartsForAGenreKeepOnlyThatGenre() async throws {
        let genre = try await MusicCatalogResourceRequest<Genre>().response().items.first { $0.name == "Rock" }
        var request = MusicCatalogChartsRequest(genre: genre, types: [Song.self])
        request.limit = 50
        let response = try await request.response()
        let items = try XCTUnwrap(response.songCharts.first?.items)
        XCTAssertEqual(items.count, 4)
        XCTAssertTrue(items.allSatisfy { $0.artistName == "Sectoid" })
    }

    // MARK: The database

    func testTheCatalogIsImportedOnceAndReusedWhileTheDocumentsStayTheSame() throws {
        MusicCatalogService.reset()
        var phases: [CatalogImportProgress.Phase] = []
        let first = try MusicCatalogService.open(environment) { phases.append($0.phase) }
        XCTAssertEqual(first.rebuildReason, "first use")
        XCTAssertEqual(phases.first, .reading)
        XCTAssertEqual(phases.last, .done)
        XCTAssertTrue(first.documentErrors.isEmpty, "\(first.documentErrors)")
        MusicCatalogService.reset()
        let second = try MusicCatalogService.open(environment)
        XCTAssertNil(second.rebuildReason, "reused")
    }

    func testAChangedDocumentIsReimported() async throws {
        let assets = try copyOfAssets()
        let environment = try useTemporaryEnvironment(self, assets: assets)
        _ = try await MusicCatalogSearchRequest(term: "feelings", types: [Song.self]).response()
        let songs = assets.appendingPathComponent("Catalog/us/songs.json")
        var text = try String(contentsOf: songs, encoding: .utf8)
        text = text.replacingOccurrences(of: "\"Feelings\"", with: "\"Feelings (Remastered)\"")
        try text.write(to: songs, atomically: true, encoding: .utf8)
        MusicCatalogService.reset()
        let service = try MusicCatalogService.open(environment)
        XCTAssertEqual(service.rebuildReason, "catalog documents changed")
        let response = try await MusicCatalogSearchRequest(term: "feelings", types: [Song.self]).response()
        XCTAssertEqual(response.songs.first?.title, "Feelings (Remastered)")
    }

    func testAMalformedDocumentIsNamedWithItsJSONPathAndTheRestIsImported() async throws {
        let assets = try copyOfAssets()
        let environment = try useTemporaryEnvironment(self, assets: assets)
        let broken = assets.appendingPathComponent("Catalog/us/broken.json")
        try """
        {"data": [
          {"id": "1", "type": "songs", "attributes": {"name": "Fine", "durationInMillis": 1000}},
          {"id": "2", "type": "songs", "attributes": {"name": "Bad", "durationInMillis": "long"}}
        ]}
        """.write(to: broken, atomically: true, encoding: .utf8)
        let service = try MusicCatalogService.open(environment)
        XCTAssertEqual(service.documentErrors, [CatalogDocumentError(file: broken.path,
            jsonPath: "data[1].attributes.durationInMillis", reason: "expected a number")])
        XCTAssertTrue(service.documentErrors[0].description.contains("broken.json: data[1].attributes.durationInMillis"))
        let response = try await MusicCatalogSearchRequest(term: "ezer", types: [Song.self]).response()
        XCTAssertEqual(response.songs.count, 1, "the other documents are imported")
        let fine = try await MusicCatalogResourceRequest<Song>(matching: \.id, equalTo: "1").response()
        XCTAssertTrue(fine.items.isEmpty, "nothing of the broken document is imported")
    }

    func testInvalidJSONIsNamedWithItsPosition() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try "{\"data\": [ {\"id\": \"1\", \"type\": \"songs\"".write(to: file, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try CatalogDocument(url: file)) { error in
            let documentError = error as? CatalogDocumentError
            XCTAssertEqual(documentError?.file, file.path)
            XCTAssertFalse(documentError?.reason.isEmpty ?? true)
        }
        try "{\"data\": {\"id\": \"1\"}}".write(to: file, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try CatalogDocument(url: file)) { error in
            XCTAssertEqual((error as? CatalogDocumentError)?.jsonPath, "data")
        }
        try "{\"data\": [{\"id\": \"1\", \"type\": \"albums\", \"attributes\": {\"artistName\": \"x\"}}]}"
            .write(to: file, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try CatalogDocument(url: file)) { error in
            XCTAssertEqual((error as? CatalogDocumentError)?.jsonPath, "data[0].attributes.name")
        }
    }

    func testACorruptDatabaseIsReportedAndRebuilt() async throws {
        _ = try await MusicCatalogSearchRequest(term: "x", types: [Song.self]).response()
        MusicCatalogService.reset()
        let database = environment.dataDirectory.appendingPathComponent("catalog.sqlite")
        try Data(repeating: 0x5A, count: 8_192).write(to: database)
        let service = try MusicCatalogService.open(environment)
        XCTAssertTrue(service.rebuildReason?.contains("not a usable catalog database") ?? false, "\(String(describing: service.rebuildReason))")
        let response = try await MusicCatalogSearchRequest(term: "nebula", types: [Song.self]).response()
        XCTAssertEqual(response.songs.first?.title, "Nebula")
    }

    func testAForeignSQLiteDatabaseIsRebuilt() async throws {
        let database = environment.dataDirectory.appendingPathComponent("catalog.sqlite")
        try FileManager.default.createDirectory(at: environment.dataDirectory, withIntermediateDirectories: true)
        let foreign = try SQLiteDatabase(path: database.path)
        try foreign.execute("CREATE TABLE notes(text TEXT); INSERT INTO notes VALUES ('mine')")
        MusicCatalogService.reset()
        let service = try MusicCatalogService.open(environment)
        XCTAssertNotNil(service.rebuildReason)
        let response = try await MusicCatalogSearchRequest(term: "nebula", types: [Song.self]).response()
        XCTAssertEqual(response.songs.count, 1)
    }

    func testUserDocumentsAreImportedToo() async throws {
        let folder = MusicCatalogService.userDocumentsDirectory(environment)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try """
        {"storefront": "us", "data": [{"id": "990001", "type": "songs", "attributes": {"name": "My Own Song", "artistName": "Me"}}]}
        """.write(to: folder.appendingPathComponent("mine.json"), atomically: true, encoding: .utf8)
        MusicCatalogService.reset()
        let response = try await MusicCatalogSearchRequest(term: "my own", types: [Song.self]).response()
        XCTAssertEqual(response.songs.first?.id, "990001")
    }

    func testNoDocumentsIsAClearError() async throws {
        try useTemporaryEnvironment(self, assets: nil)
        do {
            _ = try await MusicCatalogSearchRequest(term: "x", types: [Song.self]).response()
            XCTFail("expected an error")
        } catch let error as MusicCatalogError {
            XCTAssertTrue(error.description.contains("MUSICKIT_ASSETS"), error.description)
        }
    }

    /// A writable copy of the bundled Catalog (and the files it points at, by symlink).
    private func copyOfAssets() throws -> URL {
        let source = try XCTUnwrap(MusicKitEnvironment.bundledAssets())
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("musickit-assets-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: source.appendingPathComponent("Catalog"), to: copy.appendingPathComponent("Catalog"))
        for folder in ["Previews", "Albums", "Artwork"] {
            try FileManager.default.createSymbolicLink(at: copy.appendingPathComponent(folder),
                                                       withDestinationURL: source.appendingPathComponent(folder))
        }
        addTeardownBlock { try? FileManager.default.removeItem(at: copy) }
        return copy
    }
}
