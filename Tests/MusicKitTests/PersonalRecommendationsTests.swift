import Foundation
@testable import MusicKitCore
import XCTest

/// Recommendations made from the listening history and the bundled catalog.
final class PersonalRecommendationsTests: XCTestCase {
    override func setUpWithError() throws {
        try useTemporaryEnvironment(self)
        try authorizeTestApp()
    }

    private func album(_ id: MusicItemID) async throws -> Album {
        try await unwrapped(MusicCatalogResourceRequest<Album>(matching: \.id, equalTo: id).response().items.first)
    }

    /// Plays of `count` tracks of `album`, as the player records them.
    private func recordPlays(of album: Album, count: Int) async throws {
        let tracks = try await album.with([.tracks]).tracks ?? []
        XCTAssertGreaterThanOrEqual(tracks.count, count)
        try MusicLibraryService.open().withStore { store in
            try store.recordPlays(tracks.prefix(count).map { (played: Date(), resource: $0.resource, container: album.resource) })
        }
    }

    func testSomeoneWhoPlayedNothingGetsTheNewestAlbums() async throws {
        let recommendations = try await MusicPersonalRecommendationsRequest().response().recommendations
        XCTAssertEqual(recommendations.map(\.id), ["new-releases"])
        let newest = try XCTUnwrap(recommendations.first)
        XCTAssertEqual(newest.title, "New Releases")
        XCTAssertEqual(Set(newest.albums.prefix(2).map(\.id)), [BundledCatalog.advancedResearch, BundledCatalog.gaplessAlbum],
                       "the 2012 albums first")
        XCTAssertEqual(newest.types.map { "\($0)" }, ["Album"])
        XCTAssertNotNil(newest.nextRefreshDate)
    }

    /// Two tracks of Elysia (Obsidian Shell, metal) played: it is recently played and in heavy
    /// rotation; the artist's other album is recommended, for the artist and for the genre; what
    /// was played is not among the new releases.
    func testRecommendationsFollowWhatWasPlayed() async throws {
        let elysia = try await album(BundledCatalog.elysia)
        try await recordPlays(of: elysia, count: 2)
        let recommendations = try await MusicPersonalRecommendationsRequest().response().recommendations
        XCTAssertEqual(recommendations.map(\.id),
                       ["recently-played", "heavy-rotation", "more-like:Obsidian Shell", "genre:Metal", "new-releases"])
        XCTAssertEqual(recommendations[0].albums.map(\.id), [elysia.id])
        XCTAssertEqual(recommendations[1].albums.map(\.id), [elysia.id])
        XCTAssertEqual(recommendations[2].title, "More Like Obsidian Shell")
        XCTAssertEqual(recommendations[2].reason, "Because you listened to Obsidian Shell")
        XCTAssertEqual(recommendations[2].items.map(\.title), ["Angelic Asylum"])
        XCTAssertEqual(recommendations[2].items.first?.subtitle, "Obsidian Shell")
        XCTAssertEqual(recommendations[3].title, "Metal for You")
        XCTAssertFalse(recommendations[4].albums.contains { $0.id == elysia.id }, "not what was played")

        var refresh = MusicPersonalRecommendationsRequest(refreshing: [recommendations[2], recommendations[0]])
        refresh.limit = 1
        let refreshed = try await refresh.response().recommendations
        XCTAssertEqual(refreshed.map(\.id), ["more-like:Obsidian Shell"], "the ones asked for, in their order, limited")

        try setAccount { $0.usesListeningHistory = false }
        let withoutHistory = try await MusicPersonalRecommendationsRequest().response().recommendations
        XCTAssertEqual(withoutHistory.map(\.id), ["new-releases"], "the history is not read when it is switched off")
    }

    /// The Apple Music API's shape: encoded and decoded back equal.
    func testRecommendationsRoundTripThroughTheAPIShape() async throws {
        try await recordPlays(of: album(BundledCatalog.elysia), count: 1)
        let response = try await MusicPersonalRecommendationsRequest().response()
        let json = try JSONEncoder().encode(response)
        let text = String(decoding: json, as: UTF8.self)
        XCTAssertTrue(text.contains("\"personal-recommendation\""), text)
        XCTAssertTrue(text.contains("\"stringForDisplay\":\"Recently Played\""), text)
        let again = try JSONDecoder().decode(MusicPersonalRecommendationsResponse.self, from: json)
        XCTAssertEqual(again.recommendations.map(\.id), response.recommendations.map(\.id))
        XCTAssertEqual(again.recommendations.map(\.title), response.recommendations.map(\.title))
        XCTAssertEqual(again.recommendations.map { $0.items.map(\.id) }, response.recommendations.map { $0.items.map(\.id) })
    }

    func testRecommendationsNeedAnAuthorizedApp() async throws {
        try MusicAuthorizationSettings.set(.denied, for: MusicKitEnvironment.current.applicationIdentifier)
        do {
            _ = try await MusicPersonalRecommendationsRequest().response()
            XCTFail("recommendations without authorization")
        } catch MusicLibrary.Error.permissionDenied {}
    }
}
