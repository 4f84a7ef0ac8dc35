import Foundation
@testable import MusicKitCore
import XCTest

/// The catalog requests against the Apple Music API (a local server answering with real API
/// responses from Fixtures/), its offline cache, and the choice between the API and the
/// embedded catalog.
final class AppleMusicCatalogTests: XCTestCase {
    private var server: LocalHTTPServer?

    override func setUpWithError() throws {
        try useTemporaryEnvironment(self)
        MusicDataRequest.tokenProvider = TestTokens(user: nil)
        MusicDataRequest.retryPolicy = MusicDataRequest.RetryPolicy(retries: 1, firstBackoff: 0.01, longestWait: 1)
        unsetenv(AppleMusicCatalog.choiceVariable)
        setenv("LANG", "en_GB.UTF-8", 1)
    }

    override func tearDown() {
        server?.stop()
        MusicDataRequest.tokenProvider = DefaultMusicTokenProvider()
        MusicDataRequest.retryPolicy = MusicDataRequest.RetryPolicy()
        unsetenv("MUSICKIT_API_BASE_URL")
        unsetenv(AppleMusicCatalog.choiceVariable)
        unsetenv("LANG")
    }

    private func fixture(_ name: String) throws -> Data {
        try Data(contentsOf: XCTUnwrap(Bundle.module.url(forResource: "Fixtures/\(name)", withExtension: nil)))
    }

    /// A server playing the API: `routes` maps a request's path to its answer.
    private func serveAPI(_ routes: @escaping @Sendable (_ path: String, _ query: [String: String]) -> LocalHTTPServer.Answer) throws -> LocalHTTPServer {
        let server = try LocalHTTPServer { request in
            let components = URLComponents(string: request.target)
            return routes(components?.path ?? "", AppleMusicCatalogTests.query(request))
        }
        self.server = server
        setenv("MUSICKIT_API_BASE_URL", server.baseURL.absoluteString, 1)
        return server
    }

    private static func query(_ request: LocalHTTPServer.Request) -> [String: String] {
        // As a server reads it: "+" is a space.
        var components = URLComponents(string: request.target)
        let query = components?.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%20")
        components?.percentEncodedQuery = query
        return Dictionary((components?.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
    }

    private static let notFound = LocalHTTPServer.Answer(status: 404, body: Data(#"{"errors":[{"status":"404","code":"40400","title":"Resource Not Found"}]}"#.utf8))

    func testResourcesComeFromTheAPIWithApplesParametersAndSaySo() async throws {
        let album = try fixture("album-310730204-us-with-tracks.json")
        let server = try serveAPI { path, query in
            // The API answers the identifiers it has and leaves the others out.
            path == "/v1/catalog/us/albums" && query["ids"]?.hasPrefix("310730204") == true
                ? LocalHTTPServer.Answer(body: album) : Self.notFound
        }
        var request = MusicCatalogResourceRequest<Album>(matching: \.id, memberOf: ["310730204", "999"])
        request.properties = [.tracks]
        let response = try await request.response()

        XCTAssertEqual(response.items.map(\.title), ["Born to Run"])
        XCTAssertEqual(response.items.first?.tracks?.count, 1, "the included tracks")
        XCTAssertNil(response.items.first?.artists, "a relationship not asked for stays unloaded, as with the embedded catalog")
        XCTAssertNil(response.item(for: "999"))
        XCTAssertEqual(response.answerSource, .appleMusicAPI)
        let sent = try XCTUnwrap(server.requests.first)
        XCTAssertEqual(sent.header("Authorization"), "Bearer developer-token-for-tests")
        XCTAssertEqual(Self.query(sent), ["ids": "310730204,999", "include": "tracks", "l": "en-GB"])
        XCTAssertEqual(server.requests.count, 1, "all identifiers in one request")
    }

    func testFindEquivalentsAsksTheAPIForTheStorefrontsVersion() async throws {
        let song = try fixture("song-897072750-us.json")
        let server = try serveAPI { path, query in
            guard path == "/v1/catalog/us/songs" else { return Self.notFound }
            if query["filter[equivalents]"] == "1440818839" { return LocalHTTPServer.Answer(body: song) }
            return LocalHTTPServer.Answer(body: Data(#"{"data":[]}"#.utf8))
        }
        var request = MusicCatalogResourceRequest<Song>(matching: \.id, equalTo: "1440818839")
        request.options = [.findEquivalents]
        let response = try await request.response()

        XCTAssertEqual(response.item(for: "1440818839")?.id, "897072750", "the other storefront's ID answered by this one's")
        XCTAssertEqual(server.requests.map { Self.query($0)["filter[equivalents]"] }, [nil, "1440818839"],
                       "asked by ID first, then for its equivalent")
    }

    func testSearchUsesApplesParametersAndPagesThroughTheAPIsNextLinks() async throws {
        let results = try fixture("search-us-james-brown.json")
        let server = try serveAPI { path, _ in
            path == "/v1/catalog/us/search" ? LocalHTTPServer.Answer(body: results) : Self.notFound
        }
        var request = MusicCatalogSearchRequest(term: "james brown", types: [Album.self, Artist.self])
        request.limit = 1
        request.includeTopResults = true
        let response = try await request.response()

        XCTAssertEqual(response.albums.count, 1)
        XCTAssertEqual(response.artists.first?.name, "James Brown")
        XCTAssertTrue(response.albums.hasNextBatch)
        XCTAssertEqual(response.answerSource, .appleMusicAPI)
        XCTAssertEqual(Self.query(try XCTUnwrap(server.requests.first)),
                       ["term": "james brown", "types": "albums,artists", "limit": "1", "with": "topResults", "l": "en-GB"])

        let next = try await response.albums.nextBatch(limit: 5)
        XCTAssertEqual(next?.count, 1, "the next batch read from the API's answer")
        let nextRequest = try XCTUnwrap(server.requests.last)
        XCTAssertEqual(Self.query(nextRequest), ["types": "albums", "term": "james brown", "offset": "1", "limit": "5"],
                       "the API's own next link, with the limit asked for")
    }

    func testChartsAndSuggestionsComeFromTheAPI() async throws {
        let charts = try fixture("charts-us-most-played-songs-2017-11-03.json")
        let song = try JSONSerialization.jsonObject(with: fixture("song-897072750-us.json")) as! [String: Any]
        let suggestions = try JSONSerialization.data(withJSONObject: ["results": ["suggestions": [
            ["kind": "terms", "searchTerm": "invitation", "displayTerm": "Invitation"],
            ["kind": "topResults", "content": (song["data"] as! [Any])[0]],
        ]]])
        let server = try serveAPI { path, _ in
            switch path {
            case "/v1/catalog/us/charts": LocalHTTPServer.Answer(body: charts)
            case "/v1/catalog/us/search/suggestions": LocalHTTPServer.Answer(body: suggestions)
            default: Self.notFound
            }
        }
        let response = try await MusicCatalogChartsRequest(kinds: [.mostPlayed], types: [Song.self]).response()
        XCTAssertEqual(response.songCharts.first?.title, "Top Songs")
        XCTAssertEqual(response.songCharts.first?.items.count, 20)
        XCTAssertEqual(response.answerSource, .appleMusicAPI)
        XCTAssertEqual(Self.query(try XCTUnwrap(server.requests.first)),
                       ["types": "songs", "chart": "most-played", "limit": "20", "l": "en-GB"])

        let suggested = try await MusicCatalogSearchSuggestionsRequest(term: "invit", includingTopResultsOfTypes: [Song.self]).response()
        XCTAssertEqual(suggested.suggestions.map(\.searchTerm), ["invitation"])
        XCTAssertEqual(suggested.suggestions.map(\.displayTerm), ["Invitation"])
        XCTAssertEqual(suggested.topResults.map(\.id), ["897072750"])
        XCTAssertEqual(Self.query(try XCTUnwrap(server.requests.last)),
                       ["term": "invit", "kinds": "terms,topResults", "types": "songs", "limit": "10", "l": "en-GB"])
    }

    func testWithLoadsAnItemsRelationshipsFromTheAPI() async throws {
        let album = try fixture("album-310730204-us-with-tracks.json")
        let server = try serveAPI { path, query in
            switch path {
            case "/v1/catalog/us/albums" where query["ids"] != nil: LocalHTTPServer.Answer(body: album)
            case "/v1/catalog/us/albums/310730204": LocalHTTPServer.Answer(body: album)
            default: Self.notFound
            }
        }
        let bare = try await MusicCatalogResourceRequest<Album>(matching: \.id, equalTo: "310730204").response().items.first
        XCTAssertNil(bare?.tracks)
        let loaded = try await XCTUnwrap(bare).with([.tracks, .artists])
        XCTAssertEqual(loaded.tracks?.count, 1)
        XCTAssertEqual(loaded.artists?.first?.id, "178834")
        XCTAssertEqual(Self.query(try XCTUnwrap(server.requests.last)), ["include": "tracks,artists", "l": "en-GB"])
    }

    func testAnswersAreCachedForTheirFreshnessAndAnswerOfflineWhenStale() async throws {
        let song = try fixture("song-897072750-us.json")
        let other = try fixture("song-900032829-us.json")
        let server = try serveAPI { path, query in
            switch query["ids"] {
            case "897072750": LocalHTTPServer.Answer(headers: ["Cache-Control": "max-age=3600"], body: song)
            case "900032829": LocalHTTPServer.Answer(headers: ["Cache-Control": "no-cache"], body: other)
            case "1": LocalHTTPServer.Answer(headers: ["Cache-Control": "no-store"], body: song)
            default: Self.notFound
            }
        }
        func fetch(_ id: MusicItemID) async throws -> MusicCatalogResourceResponse<Song> {
            try await MusicCatalogResourceRequest<Song>(matching: \.id, equalTo: id).response()
        }
        let first = try await fetch("897072750")
        XCTAssertEqual(first.answerSource, .appleMusicAPI)
        let again = try await fetch("897072750")
        guard case .cache(_, isStale: false) = again.answerSource else { return XCTFail("fresh: from the cache, \(String(describing: again.answerSource))") }
        XCTAssertEqual(again.items, first.items)
        XCTAssertEqual(server.requests.count, 1, "a fresh answer is not asked for again")

        _ = try await fetch("900032829")
        _ = try await fetch("1")
        server.stop()
        let offline = try await fetch("900032829")
        guard case .cache(let fetched, isStale: true) = offline.answerSource else {
            return XCTFail("offline: the stale copy, \(String(describing: offline.answerSource))")
        }
        XCTAssertEqual(offline.items.first?.id, "900032829")
        XCTAssertLessThan(Date().timeIntervalSince(fetched), 60)
        XCTAssertTrue(offline.answerSource!.description.contains("stale"), offline.answerSource!.description)
        do {
            _ = try await fetch("1")
            XCTFail("an answer marked no-store is not kept")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .cannotConnectToHost)
        }
    }

    func testTheEmbeddedCatalogAnswersWithoutADeveloperTokenOrWhenChosen() async throws {
        let server = try serveAPI { _, _ in Self.notFound }
        MusicDataRequest.tokenProvider = DefaultMusicTokenProvider()
        let request = MusicCatalogResourceRequest<Song>(matching: \.id, equalTo: BundledCatalog.ezerEv)
        let embedded = try await request.response()
        XCTAssertEqual(embedded.items.first?.id, BundledCatalog.ezerEv)
        XCTAssertEqual(embedded.answerSource, .embeddedCatalog, "no developer token: the embedded catalog")

        setenv(AppleMusicCatalog.choiceVariable, "remote", 1)
        do {
            _ = try await request.response()
            XCTFail("the API without a developer token must fail")
        } catch let error as MusicDeveloperTokenError {
            XCTAssertTrue(error.description.contains("MUSICKIT_DEVELOPER_TOKEN"), error.description)
        }

        MusicDataRequest.tokenProvider = TestTokens(user: nil)
        setenv(AppleMusicCatalog.choiceVariable, "local", 1)
        let chosen = try await request.response()
        XCTAssertEqual(chosen.answerSource, .embeddedCatalog, "local chosen although a token is there")
        XCTAssertTrue(server.requests.isEmpty)
    }

    func testAnUnreadableAnswerNamesTheRequestAndTheField() async throws {
        _ = try serveAPI { _, _ in LocalHTTPServer.Answer(body: Data(#"{"data":[{"id":"1","type":"songs","attributes":7}]}"#.utf8)) }
        do {
            _ = try await MusicCatalogResourceRequest<Song>(matching: \.id, equalTo: "1").response()
            XCTFail("must throw")
        } catch let error as MusicCatalogError {
            let text = error.description
            XCTAssertTrue(text.contains("/v1/catalog/us/songs?ids=1") && text.contains("data[0].attributes"), text)
        }
    }
}
