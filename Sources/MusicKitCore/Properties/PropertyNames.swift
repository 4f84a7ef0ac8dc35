// The relationship, association (view) and extended-attribute properties each item type can
// load with `with(_:)` or a request's `properties`, named as in Apple's MusicKit.
import Foundation

extension PartialMusicProperty where Root == Song {
    public static var albums: MusicRelationshipProperty<Song, Album> { .init(name: "albums", key: "albums", source: .relationship) }
    public static var artists: MusicRelationshipProperty<Song, Artist> { .init(name: "artists", key: "artists", source: .relationship) }
    public static var composers: MusicRelationshipProperty<Song, Artist> { .init(name: "composers", key: "composers", source: .relationship) }
    public static var genres: MusicRelationshipProperty<Song, Genre> { .init(name: "genres", key: "genres", source: .relationship) }
    public static var musicVideos: MusicRelationshipProperty<Song, MusicVideo> { .init(name: "musicVideos", key: "music-videos", source: .relationship) }
    public static var station: MusicRelationshipProperty<Song, Station> { .init(name: "station", key: "station", source: .relationship) }
    public static var artistURL: MusicExtendedAttributeProperty<Song, URL> { .init(name: "artistURL", key: "artistUrl", source: .extendedAttribute) }
    public static var audioVariants: MusicExtendedAttributeProperty<Song, [AudioVariant]> { .init(name: "audioVariants", key: "audioVariants", source: .extendedAttribute) }
}

extension PartialMusicProperty where Root == Album {
    public static var appearsOn: MusicRelationshipProperty<Album, Playlist> { .init(name: "appearsOn", key: "appears-on", source: .view) }
    public static var artists: MusicRelationshipProperty<Album, Artist> { .init(name: "artists", key: "artists", source: .relationship) }
    public static var genres: MusicRelationshipProperty<Album, Genre> { .init(name: "genres", key: "genres", source: .relationship) }
    public static var otherVersions: MusicRelationshipProperty<Album, Album> { .init(name: "otherVersions", key: "other-versions", source: .view) }
    public static var recordLabels: MusicRelationshipProperty<Album, RecordLabel> { .init(name: "recordLabels", key: "record-labels", source: .relationship) }
    public static var relatedAlbums: MusicRelationshipProperty<Album, Album> { .init(name: "relatedAlbums", key: "related-albums", source: .view) }
    public static var relatedVideos: MusicRelationshipProperty<Album, MusicVideo> { .init(name: "relatedVideos", key: "related-videos", source: .view) }
    public static var tracks: MusicRelationshipProperty<Album, Track> { .init(name: "tracks", key: "tracks", source: .relationship) }
    public static var artistURL: MusicExtendedAttributeProperty<Album, URL> { .init(name: "artistURL", key: "artistUrl", source: .extendedAttribute) }
    public static var audioVariants: MusicExtendedAttributeProperty<Album, [AudioVariant]> { .init(name: "audioVariants", key: "audioVariants", source: .extendedAttribute) }
}

extension PartialMusicProperty where Root == Artist {
    public static var albums: MusicRelationshipProperty<Artist, Album> { .init(name: "albums", key: "albums", source: .relationship) }
    public static var appearsOnAlbums: MusicRelationshipProperty<Artist, Album> { .init(name: "appearsOnAlbums", key: "appears-on-albums", source: .view) }
    public static var compilationAlbums: MusicRelationshipProperty<Artist, Album> { .init(name: "compilationAlbums", key: "compilation-albums", source: .view) }
    public static var featuredAlbums: MusicRelationshipProperty<Artist, Album> { .init(name: "featuredAlbums", key: "featured-albums", source: .view) }
    public static var featuredPlaylists: MusicRelationshipProperty<Artist, Playlist> { .init(name: "featuredPlaylists", key: "featured-playlists", source: .view) }
    public static var fullAlbums: MusicRelationshipProperty<Artist, Album> { .init(name: "fullAlbums", key: "full-albums", source: .view) }
    public static var genres: MusicRelationshipProperty<Artist, Genre> { .init(name: "genres", key: "genres", source: .relationship) }
    public static var latestRelease: MusicRelationshipProperty<Artist, Album> { .init(name: "latestRelease", key: "latest-release", source: .view) }
    public static var liveAlbums: MusicRelationshipProperty<Artist, Album> { .init(name: "liveAlbums", key: "live-albums", source: .view) }
    public static var musicVideos: MusicRelationshipProperty<Artist, MusicVideo> { .init(name: "musicVideos", key: "music-videos", source: .relationship) }
    public static var playlists: MusicRelationshipProperty<Artist, Playlist> { .init(name: "playlists", key: "playlists", source: .relationship) }
    public static var similarArtists: MusicRelationshipProperty<Artist, Artist> { .init(name: "similarArtists", key: "similar-artists", source: .view) }
    public static var singles: MusicRelationshipProperty<Artist, Album> { .init(name: "singles", key: "singles", source: .view) }
    public static var station: MusicRelationshipProperty<Artist, Station> { .init(name: "station", key: "station", source: .relationship) }
    public static var topMusicVideos: MusicRelationshipProperty<Artist, MusicVideo> { .init(name: "topMusicVideos", key: "top-music-videos", source: .view) }
    public static var topSongs: MusicRelationshipProperty<Artist, Song> { .init(name: "topSongs", key: "top-songs", source: .view) }
}

extension PartialMusicProperty where Root == Playlist {
    public static var curator: MusicRelationshipProperty<Playlist, Curator> { .init(name: "curator", key: "curator", source: .relationship) }
    public static var entries: MusicRelationshipProperty<Playlist, Playlist.Entry> { .init(name: "entries", key: "tracks", source: .relationship) }
    public static var featuredArtists: MusicRelationshipProperty<Playlist, Artist> { .init(name: "featuredArtists", key: "featured-artists", source: .view) }
    public static var moreByCurator: MusicRelationshipProperty<Playlist, Playlist> { .init(name: "moreByCurator", key: "more-by-curator", source: .view) }
    public static var radioShow: MusicRelationshipProperty<Playlist, RadioShow> { .init(name: "radioShow", key: "radio-show", source: .relationship) }
    public static var tracks: MusicRelationshipProperty<Playlist, Track> { .init(name: "tracks", key: "tracks", source: .relationship) }
}

extension PartialMusicProperty where Root == MusicVideo {
    public static var albums: MusicRelationshipProperty<MusicVideo, Album> { .init(name: "albums", key: "albums", source: .relationship) }
    public static var artists: MusicRelationshipProperty<MusicVideo, Artist> { .init(name: "artists", key: "artists", source: .relationship) }
    public static var genres: MusicRelationshipProperty<MusicVideo, Genre> { .init(name: "genres", key: "genres", source: .relationship) }
    public static var moreByArtist: MusicRelationshipProperty<MusicVideo, MusicVideo> { .init(name: "moreByArtist", key: "more-by-artist", source: .view) }
    public static var moreInGenre: MusicRelationshipProperty<MusicVideo, MusicVideo> { .init(name: "moreInGenre", key: "more-in-genre", source: .view) }
    public static var songs: MusicRelationshipProperty<MusicVideo, Song> { .init(name: "songs", key: "songs", source: .relationship) }
    public static var artistURL: MusicExtendedAttributeProperty<MusicVideo, URL> { .init(name: "artistURL", key: "artistUrl", source: .extendedAttribute) }
}

extension PartialMusicProperty where Root == Curator {
    public static var playlists: MusicRelationshipProperty<Curator, Playlist> { .init(name: "playlists", key: "playlists", source: .relationship) }
}

extension PartialMusicProperty where Root == RadioShow {
    public static var playlists: MusicRelationshipProperty<RadioShow, Playlist> { .init(name: "playlists", key: "playlists", source: .relationship) }
}

extension PartialMusicProperty where Root == RecordLabel {
    public static var latestReleases: MusicRelationshipProperty<RecordLabel, Album> { .init(name: "latestReleases", key: "latest-releases", source: .view) }
    public static var topReleases: MusicRelationshipProperty<RecordLabel, Album> { .init(name: "topReleases", key: "top-releases", source: .view) }
}
