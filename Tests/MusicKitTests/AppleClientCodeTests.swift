import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking  // as every Linux file that uses URLSession imports it
#endif
import MusicKit  // not @testable: this file sees only the public API, as an app does
import XCTest

/// Client code written the way Apple's documentation shows it, for the requests added to
/// match Apple's surface: it must compile against the public API alone, and run.
final class AppleClientCodeTests: XCTestCase {
    override func setUpWithError() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("musickit-client-\(UUID().uuidString)")
        MusicKitEnvironment.current = MusicKitEnvironment(root: root, assetsDirectory: MusicKitEnvironment.bundledAssets(),
                                                          applicationIdentifier: "apple-client-code")
        try MusicAuthorizationSettings.set(.authorized, for: "apple-client-code")
        addTeardownBlock { try? FileManager.default.removeItem(at: root) }
    }

    /// Apple's documentation has an app that gets the person's token its own way subclass
    /// `MusicUserTokenProvider` (issue #43: the class was not open, so this did not compile
    /// outside the module).
    func testAnAppSubclassesTheUserTokenProvider() async throws {
        final class AppTokens: MusicUserTokenProvider, MusicDeveloperTokenProvider, @unchecked Sendable {
            override func userToken(for developerToken: String, options: MusicTokenRequestOptions) async throws -> String {
                "user-token-for-\(developerToken)"
            }
            func developerToken(options: MusicTokenRequestOptions) async throws -> String { "developer-token" }
        }
        let tokens = AppTokens()
        MusicDataRequest.tokenProvider = tokens
        defer { MusicDataRequest.tokenProvider = DefaultMusicTokenProvider() }
        let provider: MusicUserTokenProvider = tokens
        let token = try await provider.userToken(for: "developer-token", options: [])
        XCTAssertEqual(token, "user-token-for-developer-token", "the override is called through the base class")
    }

    /// `MusicDataRequest` takes Foundation's `URLRequest` and answers with Foundation's
    /// `HTTPURLResponse`, as on Apple platforms. Issue #43: MusicKit had types of its own by
    /// those names, so this file, which also imports FoundationNetworking, did not compile
    /// ("'URLRequest' is ambiguous for type lookup").
    func testMusicDataRequestTakesFoundationsURLRequestAndAnswersWithItsHTTPURLResponse() async throws {
        final class AppTokens: MusicUserTokenProvider, MusicDeveloperTokenProvider, @unchecked Sendable {
            func developerToken(options: MusicTokenRequestOptions) async throws -> String { "developer-token" }
        }
        MusicDataRequest.tokenProvider = AppTokens()
        defer { MusicDataRequest.tokenProvider = DefaultMusicTokenProvider() }
        let server = try LocalHTTPServer { _ in LocalHTTPServer.Answer(headers: ["Content-Type": "application/json", "X-Answer": "yes"],
                                                                      body: Data(#"{"data":[]}"#.utf8)) }
        defer { server.stop() }
        var urlRequest: URLRequest = FoundationNetworking.URLRequest(url: server.baseURL.appendingPathComponent("v1/catalog/us/songs"),
                                                                     cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: 5)
        urlRequest.httpMethod = "POST"
        urlRequest.setValue("from-the-app", forHTTPHeaderField: "X-App")
        urlRequest.httpBody = Data("{}".utf8)
        let request = MusicDataRequest(urlRequest: urlRequest)
        XCTAssertEqual(request.urlRequest, urlRequest, "the request comes back as it was given")
        XCTAssertEqual(request.urlRequest.cachePolicy, .reloadIgnoringLocalCacheData)

        let response = try await request.response()
        let urlResponse: FoundationNetworking.HTTPURLResponse = response.urlResponse
        XCTAssertEqual(urlResponse.statusCode, 200)
        XCTAssertEqual(urlResponse.url, urlRequest.url)
        XCTAssertEqual(urlResponse.value(forHTTPHeaderField: "x-answer"), "yes")
        XCTAssertEqual(urlResponse.mimeType, "application/json")
        let sent = try XCTUnwrap(server.requests.first)
        XCTAssertEqual(sent.method, "POST")
        XCTAssertEqual(sent.headers["x-app"], "from-the-app")
        XCTAssertEqual(sent.headers["content-length"], "2", "the body is sent")
        XCTAssertEqual(sent.headers["authorization"], "Bearer developer-token")
    }

    /// Apple's conformances that `scripts/api-surface` cannot see (it compares declarations):
    /// each is required here at compile time, and the ones Apple's types do not have are
    /// checked absent, so that code written on Linux compiles on Apple platforms (issue #43).
    func testTheItemTypesHaveApplesConformances() {
        func playable<T: PlayableMusicItem>(_: T.Type) {}
        func libraryAddable<T: MusicLibraryAddable>(_: T.Type) {}
        func playlistAddable<T: MusicPlaylistAddable>(_: T.Type) {}
        func recentlyPlayed<T: MusicRecentlyPlayedRequestable>(_: T.Type) {}
        func libraryRequestable<T: MusicLibraryRequestable>(_: T.Type) {}
        func identifiable<T: Identifiable>(_: T.Type) {}
        playable(Playlist.Entry.self); playable(Playlist.Entry.Item.self); playable(RecentlyPlayedMusicItem.self)
        playable(MusicPlayer.Queue.Entry.Item.self); playable(Track.self); playable(Album.self); playable(Playlist.self)
        libraryAddable(Track.self); libraryAddable(Playlist.Entry.self); libraryAddable(Song.self); libraryAddable(Album.self)
        playlistAddable(Track.self); playlistAddable(Playlist.Entry.self); playlistAddable(Album.self); playlistAddable(Playlist.self)
        playlistAddable(Song.self); playlistAddable(MusicVideo.self)
        recentlyPlayed(Song.self); recentlyPlayed(Track.self); recentlyPlayed(MusicVideo.self); recentlyPlayed(Station.self)
        recentlyPlayed(RecentlyPlayedMusicItem.self)
        libraryRequestable(Playlist.Entry.self); libraryRequestable(Song.self); libraryRequestable(Playlist.self)
        identifiable(Playlist.Entry.Item.self)
        XCTAssertFalse(Album.self is any MusicRecentlyPlayedRequestable.Type, "Apple's Album is not recently-played requestable")
        XCTAssertFalse(Playlist.self is any MusicRecentlyPlayedRequestable.Type, "nor is its Playlist")
    }

    func testRecommendationsSearchesSectionsAndSuggestionsAsAnAppWritesThem() async throws {
        // Recommendations.
        let response = try await MusicPersonalRecommendationsRequest().response()
        var lines: [String] = []
        for recommendation in response.recommendations {
            lines.append("\(recommendation.title ?? "") \(recommendation.reason ?? "") \(recommendation.types.count)")
            for item in recommendation.items {
                switch item {
                case .album(let album): lines.append(album.title)
                case .playlist(let playlist): lines.append(playlist.name)
                case .station(let station): lines.append(station.name)
                }
                lines.append("\(item.title) \(item.subtitle ?? "") \(item.artwork != nil)")
            }
            _ = (recommendation.albums, recommendation.playlists, recommendation.stations, recommendation.nextRefreshDate)
        }
        var refresh = MusicPersonalRecommendationsRequest(refreshing: response.recommendations)
        refresh.limit = 5
        refresh.offset = 0
        let refreshed = try await refresh.response()
        XCTAssertEqual(refreshed.recommendations.map(\.id), response.recommendations.prefix(5).map(\.id))

        // Library search.
        var search = MusicLibrarySearchRequest(term: "love", types: [Song.self, Album.self, Artist.self, Playlist.self, MusicVideo.self])
        search.limit = 10
        search.includeTopResults = true
        let found = try await search.response()
        _ = (found.songs, found.albums, found.artists, found.playlists, found.musicVideos, search.types.count, search.term)
        for result in found.topResults {
            switch result {
            case .album, .artist, .musicVideo, .playlist, .song: lines.append("\(result.id) \(result.title)")
            }
        }

        // Sections.
        var sectioned = MusicLibrarySectionedRequest<Artist, Album>()
        sectioned.sortSections(by: \.name, ascending: true)
        sectioned.sortItems(by: \.title, ascending: true)
        sectioned.filterItems(matching: \.title, contains: "a")
        sectioned.filterSections(text: "x")
        sectioned.limit = 10
        sectioned.offset = 0
        for section in try await sectioned.response().sections {
            lines.append("\(section.name) \(section.id) \(section.items.count)")
        }
        let letters = try await MusicLibrarySectionedRequest<TitledSection, Song>().response().sections.map(\.title)
        XCTAssertEqual(letters, [], "an empty library has no sections")

        // Suggestions.
        var suggestions = MusicCatalogSearchSuggestionsRequest(term: "maxst", includingTopResultsOfTypes: [Artist.self, Album.self])
        suggestions.limit = 5
        let suggested = try await suggestions.response()
        XCTAssertEqual(suggested.suggestions.first?.searchTerm, "maxstack")
        lines += suggested.suggestions.map(\.displayTerm) + suggested.topResults.map(\.title)
        XCTAssertEqual(suggestions.typesForTopResults.count, 2)

        // Library requests of music videos and tracks, and loading a playlist entry's properties.
        _ = try await MusicLibraryRequest<MusicVideo>().response().items
        _ = try await MusicLibraryRequest<Track>().response().items
        let properties: [PartialMusicAsyncProperty<Playlist.Entry>] = []
        XCTAssertTrue(properties.isEmpty)
        XCTAssertEqual(response.recommendations.last?.id, "new-releases", "\(lines)")
    }
}
