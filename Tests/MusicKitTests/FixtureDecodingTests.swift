import Foundation
@testable import MusicKitCore
import XCTest

/// Real Apple Music API responses (Fixtures/, sources in Fixtures/README.md) decode into
/// MusicKit's items, one test per file, each checking values that are in the file.
final class FixtureDecodingTests: XCTestCase {
    private func data(_ name: String) throws -> Data {
        let url = try XCTUnwrap(Bundle.module.url(forResource: "Fixtures/\(name)", withExtension: nil),
                                "missing fixture \(name)")
        return try Data(contentsOf: url)
    }

    private func decode<T: Decodable>(_ type: T.Type, _ name: String) throws -> T {
        try JSONDecoder().decode(type, from: data(name))
    }

    /// The value at `path` inside a fixture, decoded as `T` (for items nested in other resources).
    private func decode<T: Decodable>(_ type: T.Type, _ name: String, at path: [Any]) throws -> T {
        var value: Any = try JSONSerialization.jsonObject(with: data(name))
        for step in path {
            if let key = step as? String { value = try XCTUnwrap((value as? [String: Any])?[key], "no \(key) in \(name)") }
            if let index = step as? Int { value = try XCTUnwrap((value as? [Any])?[index], "no [\(index)] in \(name)") }
        }
        return try JSONDecoder().decode(type, from: JSONSerialization.data(withJSONObject: value))
    }

    private func date(_ text: String) -> Date { ResourceObject.parseDate(text)! }

    func testActivityHoldsAPlaylist() throws {
        let playlists = try decode(MusicItemCollection<Playlist>.self, "activity-976439514-us.json",
                                   at: ["data", 0, "relationships", "playlists"])
        XCTAssertEqual(playlists.count, 1)
        XCTAssertFalse(playlists[0].id.rawValue.isEmpty)
    }

    func testAlbumThisLandGB() throws {
        let album = try decode(Album.self, "album-1447538299-gb-resource.json")
        XCTAssertEqual(album.id, "1447538299")
        XCTAssertEqual(album.title, "This Land")
        XCTAssertEqual(album.artistName, "Gary Clark Jr.")
        XCTAssertEqual(album.trackCount, 17)
        XCTAssertEqual(album.genreNames, ["Rock", "Music", "Blues"])
        XCTAssertEqual(album.releaseDate, date("2019-02-22"))
        XCTAssertEqual(album.isSingle, false)
        XCTAssertEqual(album.artwork?.maximumWidth, 1500)
        XCTAssertEqual(album.artwork?.backgroundColor, CGColor(hex: "f3f3f5"))
        XCTAssertEqual(album.artwork?.url(width: 300, height: 300)?.absoluteString,
                       "https://is3-ssl.mzstatic.com/image/thumb/Music124/v4/49/b1/57/49b15771-38c4-e54f-0971-3719826b9417/093624902263.jpg/300x300bb.jpeg")
        let tracks = try XCTUnwrap(album.tracks)
        XCTAssertEqual(tracks.count, 17)
        XCTAssertNotNil(tracks.first?.previewAssets?.first?.url)
        XCTAssertEqual(album.artists?.count, 1)
    }

    func testAlbumCprSingleWithContentRating() throws {
        let album = try decode(MusicItemCollection<Album>.self, "album-1606000385-us-with-tracks.json").first!
        XCTAssertEqual(album.title, "Cpr - Single")
        XCTAssertEqual(album.artistName, "nihmune")
        XCTAssertEqual(album.contentRating, .explicit)
        XCTAssertEqual(album.isSingle, true)
        XCTAssertEqual(album.copyright, "℗ 2022 Swag Records")
        XCTAssertEqual(album.artwork?.maximumHeight, 3000)
        XCTAssertEqual(album.tracks?.count, 1)
    }

    func testAlbumBornToRunWithItsFirstTrack() throws {
        let album = try decode(MusicItemCollection<Album>.self, "album-310730204-us-with-tracks.json").first!
        XCTAssertEqual(album.title, "Born to Run")
        XCTAssertEqual(album.artistName, "Bruce Springsteen")
        XCTAssertEqual(album.releaseDate, date("1975-08-25"))
        XCTAssertEqual(album.trackCount, 8)
        guard case .song(let song)? = album.tracks?.first else { return XCTFail("first track is a song") }
        XCTAssertEqual(song.title, "Thunder Road")
        XCTAssertEqual(song.composerName, "Bruce Springsteen")
        XCTAssertEqual(song.isrc, "USSM19904335")
        XCTAssertEqual(song.duration ?? 0, 289.186, accuracy: 0.001)
        XCTAssertEqual(song.playParameters?.id, "310730206")
    }

    func testAlbumUndercurrentWithTwoArtistsAndTenTracks() throws {
        let album = try decode(MusicItemCollection<Album>.self, "album-724267459-us-with-tracks.json").first!
        XCTAssertEqual(album.title, "Undercurrent")
        XCTAssertEqual(album.artistName, "Bill Evans & Jim Hall")
        XCTAssertEqual(album.recordLabelName, "Blue Note Records")
        XCTAssertEqual(album.isCompilation, false)
        XCTAssertEqual(album.artists?.count, 2)
        XCTAssertEqual(album.tracks?.count, 10)
        XCTAssertEqual(album.tracks?.first?.title, "My Funny Valentine")
    }

    func testAlbumsArrayWithIncludedArtists() throws {
        let albums = try decode([Album].self, "albums-gb-include-artists-array.json")
        XCTAssertEqual(albums.count, 10)
        XCTAssertEqual(albums[0].title, "This Land")
        XCTAssertEqual(albums[0].artists?.first?.name, "Gary Clark Jr.", "included artists come with their attributes")
        XCTAssertEqual(albums.reduce(0) { $0 + ($1.tracks?.count ?? 0) }, 100)
    }

    func testAppleCurator() throws {
        let curator = try decode(MusicItemCollection<Curator>.self, "apple-curator-976439526-us.json").first!
        XCTAssertEqual(curator.id, "976439526")
        XCTAssertEqual(curator.name, "Apple Music Alternative")
        XCTAssertEqual(curator.kind, .editorial)
        XCTAssertTrue(curator.editorialNotes?.standard?.hasPrefix("In an age where alternative rock bands") ?? false)
        XCTAssertEqual(curator.playlists?.count, 1)
    }

    func testArtistBruceSpringsteenWithAlbumsToPage() throws {
        let artist = try decode(MusicItemCollection<Artist>.self, "artist-178834-us.json").first!
        XCTAssertEqual(artist.id, "178834")
        XCTAssertEqual(artist.name, "Bruce Springsteen")
        XCTAssertEqual(artist.genreNames, ["Rock"])
        XCTAssertEqual(artist.url?.absoluteString, "https://itunes.apple.com/us/artist/bruce-springsteen/id178834")
        let albums = try XCTUnwrap(artist.albums)
        XCTAssertEqual(albums.count, 1)
        XCTAssertTrue(albums.hasNextBatch, "the relationship has a next link")
        XCTAssertNil(artist.topSongs, "associations not in the document are not loaded")
    }

    func testArtistGaryClarkJrResource() throws {
        let artist = try decode(Artist.self, "artist-266463936-gb-resource.json")
        XCTAssertEqual(artist.name, "Gary Clark Jr.")
        XCTAssertEqual(artist.albums?.count, 18)
        XCTAssertEqual(artist.playlists?.count, 1)
    }

    func testArtistsArray() throws {
        let artists = try decode([Artist].self, "artists-266463936-gb-array.json")
        XCTAssertEqual(artists.count, 1)
        XCTAssertEqual(artists[0].id, "266463936")
        XCTAssertEqual(artists[0].albums?.count, 18)
    }

    func testChartsWithMusicVideosSongsAndAlbums() throws {
        let charts = try decode(MusicCatalogChartsResponse.self, "charts-us-most-played-all-2017-11-04.json")
        XCTAssertEqual(charts.songCharts.first?.title, "Top Songs")
        XCTAssertEqual(charts.songCharts.first?.items.count, 50)
        XCTAssertEqual(charts.songCharts.first?.items.first?.title, "Ghostface Killers (feat. Travis Scott)")
        XCTAssertEqual(charts.albumCharts.first?.items.first?.title, "Without Warning")
        XCTAssertEqual(charts.musicVideoCharts.first?.items.count, 50, "videos without attributes decode too")
        XCTAssertEqual(charts.songCharts.first?.kind, .mostPlayed)
    }

    /// Charts encode to the API's shape and decode back equal (the chart ids, names, kinds and items).
    func testChartsRoundTripThroughTheirEncoding() throws {
        let charts = try decode(MusicCatalogChartsResponse.self, "charts-us-songs-albums-genre20.json")
        let again = try JSONDecoder().decode(MusicCatalogChartsResponse.self, from: JSONEncoder().encode(charts))
        XCTAssertEqual(again, charts)
        XCTAssertEqual(again.songCharts.first?.items.first?.title, "Believer")
    }

    /// Apple's search hints (the older shape: a list of terms) decode as suggestions; encoding
    /// writes the suggestions shape, which decodes back equal.
    func testSearchHintsAsSuggestions() throws {
        let hints = try decode(MusicCatalogSearchSuggestionsResponse.self, "search-hints-us-love.json")
        XCTAssertEqual(hints.suggestions.count, 10)
        XCTAssertEqual(hints.suggestions.first?.searchTerm, "love kendrick lamar")
        XCTAssertEqual(hints.suggestions.first?.displayTerm, "love kendrick lamar")
        let again = try JSONDecoder().decode(MusicCatalogSearchSuggestionsResponse.self, from: JSONEncoder().encode(hints))
        XCTAssertEqual(again, hints)
    }

    func testChartOfSongs() throws {
        let charts = try decode(MusicCatalogChartsResponse.self, "charts-us-most-played-songs-2017-11-03.json")
        XCTAssertEqual(charts.songCharts.count, 1)
        XCTAssertEqual(charts.songCharts[0].items.count, 20)
        XCTAssertNotNil(charts.songCharts[0].items[0].previewAssets?.first?.url)
    }

    func testChartsForAGenre() throws {
        let charts = try decode(MusicCatalogChartsResponse.self, "charts-us-songs-albums-genre20.json")
        XCTAssertEqual(charts.songCharts.first?.title, "Most Played Songs on Apple Music")
        XCTAssertEqual(charts.songCharts.first?.items.first?.title, "Believer")
        XCTAssertEqual(charts.albumCharts.first?.items.first?.title, "Lust for Life")
    }

    func testExternalCurator() throws {
        let curator = try decode(MusicItemCollection<Curator>.self, "curator-1107687517-us.json").first!
        XCTAssertEqual(curator.name, "LargeUp")
        XCTAssertEqual(curator.kind, .external)
        XCTAssertEqual(curator.artwork?.secondaryTextColor, CGColor(hex: "f74b2f"))
    }

    func testGenrePop() throws {
        let genre = try decode(MusicItemCollection<Genre>.self, "genre-14-us.json").first!
        XCTAssertEqual(genre.id, "14")
        XCTAssertEqual(genre.name, "Pop")
    }

    func testGenresPageWithNextBatch() throws {
        let genres = try decode(MusicItemCollection<Genre>.self, "genres-us-page.json")
        XCTAssertEqual(genres.map(\.name), ["Classical", "Comedy"])
        XCTAssertTrue(genres.hasNextBatch)
    }

    func testHeavyRotationAlbum() throws {
        let albums = try decode(MusicItemCollection<Album>.self, "me-history-heavy-rotation.json")
        XCTAssertEqual(albums.first?.title, "The Essential Celine Dion")
        XCTAssertEqual(albums.first?.artistName, "Céline Dion")
        XCTAssertEqual(albums.first?.trackCount, 27)
        XCTAssertEqual(albums.first?.releaseDate, date("2008"))
        XCTAssertTrue(albums.hasNextBatch)
    }

    func testLibraryAlbums() throws {
        let albums = try decode(MusicItemCollection<Album>.self, "me-library-albums-de.json")
        XCTAssertEqual(albums.count, 2)
        XCTAssertEqual(albums[0].id, "l.DDD6dwm")
        XCTAssertEqual(albums[0].title, "A Curious Tale of Trials + Persons")
        XCTAssertEqual(albums[0].artistName, "Little Simz")
        XCTAssertEqual(albums[0].trackCount, 11)
        XCTAssertEqual(albums[0].artists?.first?.id, "r.u7AyKin")
    }

    func testLibraryMusicVideo() throws {
        let videos = try decode(MusicItemCollection<MusicVideo>.self, "me-library-music-videos.json")
        XCTAssertEqual(videos.first?.id, "i.xrX5kEvtv0VrNA")
        XCTAssertEqual(videos.first?.artistName, "U2")
        XCTAssertEqual(videos.first?.title, "Anton Corbijn's  Exclusive Film \"Linear\"")
    }

    func testCreatedLibraryPlaylist() throws {
        let playlist = try decode(MusicItemCollection<Playlist>.self, "me-library-playlist-created.json").first!
        XCTAssertEqual(playlist.id, "p.zp6KqKxsoQWAGN")
        XCTAssertEqual(playlist.name, "Some Playlist")
    }

    func testLibraryPlaylist() throws {
        let playlist = try decode(MusicItemCollection<Playlist>.self, "me-library-playlist-p.MoGJYM3CYXW09B.json").first!
        XCTAssertEqual(playlist.id, "p.MoGJYM3CYXW09B")
        XCTAssertEqual(playlist.name, "Some Playlist")
        XCTAssertEqual(playlist.standardDescription, "My description")
    }

    func testLibraryPlaylistWithTracksAndNullArtworkSize() throws {
        let playlist = try decode(MusicItemCollection<Playlist>.self, "me-library-playlist-p.O1kz87VF84ebBl-with-tracks.json").first!
        XCTAssertEqual(playlist.name, "test")
        XCTAssertEqual(playlist.artwork?.maximumWidth, 0, "width null")
        XCTAssertEqual(playlist.lastModifiedDate, ISO8601DateFormatter().date(from: "2025-10-04T10:39:12Z"))
        XCTAssertEqual(playlist.libraryAddedDate, ISO8601DateFormatter().date(from: "2025-10-02T21:31:15Z"))
        let entries = try XCTUnwrap(playlist.entries)
        XCTAssertEqual(entries.count, 1)
        XCTAssertEqual(playlist.tracks?.count, 1)
        XCTAssertNotNil(entries[0].playParameters)
    }

    func testLibraryPlaylistsPage() throws {
        let playlists = try decode(MusicItemCollection<Playlist>.self, "me-library-playlists-page.json")
        XCTAssertEqual(playlists.count, 2)
        XCTAssertEqual(playlists[0].id, "p.MoGJYM3CYXW09B")
        XCTAssertTrue(playlists.hasNextBatch)
    }

    func testLibrarySongsWithEscapedQuotes() throws {
        let songs = try decode(MusicItemCollection<Song>.self, "me-library-songs.json")
        XCTAssertEqual(songs[0].id, "i.vMXdDeVhKQWRAd")
        XCTAssertEqual(songs[0].title, "\"40\"")
        XCTAssertEqual(songs[0].albumTitle, "War (Deluxe Edition) [Remastered]")
        XCTAssertEqual(songs[0].trackNumber, 10)
        XCTAssertEqual(songs[0].playParameters?.isLibrary, true)
    }

    func testRecentlyPlayedTracks() throws {
        let songs = try decode(MusicItemCollection<Song>.self, "me-recent-played-tracks-de.json")
        XCTAssertEqual(songs.count, 2)
        XCTAssertEqual(songs[0].title, "City Ports")
        XCTAssertEqual(songs[0].artistName, "Forss")
        XCTAssertEqual(songs[0].duration ?? 0, 148.72, accuracy: 0.001)
        XCTAssertEqual(songs[0].releaseDate, date("2003-02-06"))
    }

    func testMinimalAlbum() throws {
        let album = try decode(Album.self, "minimal-album-1640832989.json")
        XCTAssertEqual(album.title, "SMITHEREENS")
        XCTAssertEqual(album.artistName, "Joji")
        XCTAssertNil(album.tracks)
    }

    func testMinimalSong() throws {
        let song = try decode(Song.self, "minimal-song-1640832991.json")
        XCTAssertEqual(song.id, "1640832991")
        XCTAssertEqual(song.title, "Glimpse of Us")
        XCTAssertEqual(song.artistName, "Joji")
        XCTAssertNotNil(song.artwork)
        XCTAssertNil(song.artists)
    }

    func testMinimalSongsCollection() throws {
        let songs = try decode(MusicItemCollection<Song>.self, "minimal-songs-collection.json")
        XCTAssertEqual(songs.count, 2)
        XCTAssertEqual(songs[0].title, "Glimpse of Us")
    }

    func testMinimalStation() throws {
        let station = try decode(Station.self, "minimal-station-ra.1440541046.json")
        XCTAssertEqual(station.name, "Apple Music Presents: Little Mix - Live from London")
        XCTAssertTrue(station.isLive)
    }

    func testMusicVideo() throws {
        let video = try decode(MusicItemCollection<MusicVideo>.self, "music-video-639032181-us.json").first!
        XCTAssertEqual(video.title, "#thatPOWER (feat. Justin Bieber)")
        XCTAssertEqual(video.artistName, "will.i.am")
        XCTAssertEqual(video.isrc, "USUV71300701")
        XCTAssertEqual(video.duration ?? 0, 292.833, accuracy: 0.001)
        XCTAssertEqual(video.albums?.count, 0, "an empty relationship is loaded and empty")
        XCTAssertEqual(video.artists?.count, 1)
    }

    func testPlaylistGaryClarkJrEssentials() throws {
        let playlist = try decode(Playlist.self, "playlist-pl.a5ef67f3dde74a568e583ac9f0406d50-gb-resource.json")
        XCTAssertEqual(playlist.name, "Gary Clark Jr. Essentials")
        XCTAssertEqual(playlist.isChart, false)
        XCTAssertEqual(playlist.tracks?.count, 17)
        XCTAssertEqual(playlist.entries?.count, 17)
        XCTAssertEqual(playlist.entries?[3].position, 3)
        XCTAssertEqual(playlist.curator?.kind, .editorial)
    }

    func testPlaylistJanetJacksonWithDescription() throws {
        let playlist = try decode(MusicItemCollection<Playlist>.self,
                                  "playlist-pl.acc464c750b94302b8806e5fcbe56e17-us-with-tracks.json").first!
        XCTAssertEqual(playlist.name, "Janet Jackson: No.1 Songs")
        XCTAssertEqual(playlist.kind, .editorial)
        XCTAssertEqual(playlist.curatorName, "Apple Music R&B")
        XCTAssertEqual(playlist.shortDescription, "The songs that cemented her iconic status.")
        XCTAssertEqual(playlist.tracks?.count, 1)
    }

    func testSearchGaryClarkJrAcrossTypes() throws {
        let response = try decode(MusicCatalogSearchResponse.self, "search-gb-gary-clark-jr-results.json")
        XCTAssertEqual(response.songs.count, 10)
        XCTAssertEqual(response.songs.first?.title, "Come Together")
        XCTAssertTrue(response.songs.hasNextBatch)
        XCTAssertEqual(response.albums.first?.title, "This Land")
        XCTAssertEqual(response.playlists.first?.name, "Gary Clark Jr. Essentials")
        XCTAssertEqual(response.artists.first?.name, "Gary Clark Jr.")
        XCTAssertEqual(response.musicVideos.count, 10)
    }

    func testSearchHeroDance() throws {
        let response = try decode(MusicCatalogSearchResponse.self, "search-us-hero-dance-grand-v.json")
        XCTAssertEqual(response.songs.count, 5)
        XCTAssertEqual(response.songs.first?.id, "1541381908")
        XCTAssertEqual(response.songs.first?.title, "Hero Dance")
        XCTAssertEqual(response.songs.first?.artistName, "Grand V")
        XCTAssertTrue(response.songs.hasNextBatch)
    }

    func testSearchHollow() throws {
        let response = try decode(MusicCatalogSearchResponse.self, "search-us-hollow-unlogix.json")
        XCTAssertEqual(response.songs.map(\.title), ["Hollow"])
        XCTAssertEqual(response.songs.first?.artistName, "UNLOGIX")
        XCTAssertFalse(response.songs.hasNextBatch)
    }

    func testSearchJamesBrown() throws {
        let response = try decode(MusicCatalogSearchResponse.self, "search-us-james-brown.json")
        XCTAssertEqual(response.albums.first?.title, "20 All-Time Greatest Hits!")
        XCTAssertEqual(response.artists.first?.name, "James Brown")
        XCTAssertEqual(response.artists.first?.id, "117118")
    }

    func testSongInvitation() throws {
        let song = try decode(MusicItemCollection<Song>.self, "song-897072750-us.json").first!
        XCTAssertEqual(song.title, "Invitation (Live)")
        XCTAssertEqual(song.artistName, "Ahmad Jamal")
        XCTAssertEqual(song.composerName, "Bronisław Kaper")
        XCTAssertEqual(song.albumTitle, "Live At the Olympia - June 27, 2012 (Live) [feat. Yusef Lateef]")
        XCTAssertEqual(song.trackNumber, 4)
        XCTAssertEqual(song.discNumber, 1)
        XCTAssertEqual(song.isrc, "FR5FH1300035")
        XCTAssertFalse(song.hasLyrics)
        XCTAssertEqual(song.genreNames, ["Jazz", "Music"])
        XCTAssertEqual(song.duration ?? 0, 672.28, accuracy: 0.001)
        XCTAssertEqual(song.previewAssets?.count, 1)
        XCTAssertEqual(song.artwork?.primaryTextColor, CGColor(hex: "fafafc"))
        XCTAssertEqual(song.artists?.first?.id, "76328")
        XCTAssertEqual(song.albums?.first?.id, "897072740")
    }

    func testSongSomethingForThePain() throws {
        let song = try decode(MusicItemCollection<Song>.self, "song-900032829-us.json").first!
        XCTAssertEqual(song.title, "Something For the Pain")
        XCTAssertEqual(song.artistName, "Michael de Jong")
        XCTAssertEqual(song.releaseDate, date("2014-07-11"))
    }

    func testSongsArray() throws {
        let songs = try decode([Song].self, "songs-gb-17-array.json")
        XCTAssertEqual(songs.count, 17)
        XCTAssertEqual(songs[0].title, "Got to Get Up")
        XCTAssertEqual(songs[0].duration ?? 0, 157.413, accuracy: 0.001)
        XCTAssertEqual(songs[0].albums?.count, 1)
    }

    func testStationAlternative() throws {
        let station = try decode(MusicItemCollection<Station>.self, "station-ra.985484166-us.json").first!
        XCTAssertEqual(station.id, "ra.985484166")
        XCTAssertEqual(station.name, "Alternative")
        XCTAssertFalse(station.isLive)
        XCTAssertEqual(station.editorialNotes?.short, "The margins to mainstream.")
        XCTAssertEqual(station.playParameters?.kind, "radioStation")
        XCTAssertEqual(station.artwork?.maximumWidth, 4320)
    }

    func testItemsEncodeBackToTheSameResource() throws {
        let song = try decode(MusicItemCollection<Song>.self, "song-897072750-us.json").first!
        let encoded = try JSONEncoder().encode(song)
        XCTAssertEqual(try JSONDecoder().decode(Song.self, from: encoded), song)
        let collection = try decode(MusicItemCollection<Genre>.self, "genres-us-page.json")
        let again = try JSONDecoder().decode(MusicItemCollection<Genre>.self, from: JSONEncoder().encode(collection))
        XCTAssertEqual(again, collection)
        XCTAssertTrue(again.hasNextBatch)
    }

    func testAResourceOfTheWrongTypeIsRefused() {
        XCTAssertThrowsError(try decode(Album.self, "minimal-song-1640832991.json")) { error in
            XCTAssertTrue("\(error)".contains("expected a resource of type albums"), "\(error)")
        }
    }
}
