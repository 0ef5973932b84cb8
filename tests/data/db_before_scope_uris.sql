-- A SQLite database written by powercontext at commit 5df0e0a (before Source ids of
-- `source add` stopped being content hashes and before pc_source_scope_uris and
-- pc_topic_memory_operator_decisions existed), by tests/data/make_db_before_scope_uris.py,
-- dumped with APSW's shell (.dump). tests/adapters/test_source_migration.py loads it.
-- SQLite dump (by APSW 3.54.1.0)
-- SQLite version 3.54.1
-- Tables like: (All)

-- The values of various per-database settings
PRAGMA page_size=4096;
-- PRAGMA encoding='UTF-8';
-- PRAGMA auto_vacuum=NONE;
-- PRAGMA max_page_count=4294967294;

-- This pragma is needed to restore virtual tables
PRAGMA writable_schema=ON;
-- This pragma turns off checking of foreign keys as tables would be
-- inconsistent while restoring.  It was introduced in SQLite 3.6.19.
PRAGMA foreign_keys=OFF;

BEGIN TRANSACTION;

-- Table  artifact_heads
DROP TABLE IF EXISTS artifact_heads;
CREATE TABLE "artifact_heads" ("artifact_id" TEXT NOT NULL PRIMARY KEY, "revision" INTEGER NOT NULL, FOREIGN KEY ("artifact_id", "revision") REFERENCES "artifact_revisions" ("artifact_id", "revision"));
INSERT INTO artifact_heads VALUES('mem_art_01m9833xkj55cty32kn9vjbw3r',1);
INSERT INTO artifact_heads VALUES('topic_art_01m9833xpb6xrvv5g5g51nr8ev',1);

-- Table  artifact_revisions
DROP TABLE IF EXISTS artifact_revisions;
CREATE TABLE "artifact_revisions" ("artifact_id" TEXT NOT NULL, "revision" INTEGER NOT NULL, "family" TEXT NOT NULL, "content_encoding" TEXT NOT NULL, "content" BLOB NOT NULL, "content_hash" TEXT NOT NULL, "lineage" TEXT NOT NULL, PRIMARY KEY ("artifact_id", "revision"));
INSERT INTO artifact_revisions VALUES('mem_art_01m9833xkj55cty32kn9vjbw3r',1,'memory','zlib',X'789C9D90C16E83301044FF65CF343260529B5FA92AB4D86BA0013B32AE9310E5DF6B5C556AA55EDAA377673C6FF60E6A443BD00AEDCB1DC8067FEB260D2D2CB474E9D9B17291A2AEAFA7B7BA3E06CEFC6654142A9087028C7759954C91FC3A399BCDF67D9E0B70E7F40D6A9D749E7075F66B11DC2F9E1C9806DF027BBB0D271A2E42EBB8F13AC2E3B58005ED64680DD07EE24E3FD095B361A71E711D73BA34BCD19AABAA6E542398A4DE48CE90F572DF8963AF2BE4D533EF914953199465A9199A92B4E04A24F4BF9EE47FCD0A580306DA91559822E5AAC6F9055351303386A758C223C9D4480BA6D9D95DC8E7BAD7704809CEDF0EBBE4038B659F03','8fededb8ca76de6b669ce896d6f00dac0be9b369efd6c0991f3022e240d441de','{"artifacts":[],"sources":[{"content_hash":"e19b45549f3b1a43c64b7653767061264f15d9f3c0d2fe05c17006c07df7901e","source_id":"src_note_1"}]}');
INSERT INTO artifact_revisions VALUES('topic_art_01m9833xpb6xrvv5g5g51nr8ev',1,'topic-memory','identity',X'7B2264657461696C223A22546167206D61696E2C207468656E206D616B652072656C656173652075706C6F6164732074686520776865656C2E222C2273756D6D617279223A22486F772072656C656173657320617265206375742E222C227469746C65223A2252656C656173652070726F63657373227D','e4d031c4b942db5da181467d5916d99a221092a64d892fad9a3c020ca8cfcb08','{"artifacts":[],"sources":[{"content_hash":"28a26030291fdc8a21c7048b0c7317ff56242196a27f68ea666531e7ef06e5c5","source_id":"src_file_1"}]}');

-- Table  memory_entry_heads
DROP TABLE IF EXISTS memory_entry_heads;
CREATE TABLE "memory_entry_heads" ("projection_id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "memory_artifact_id" TEXT NOT NULL, "head_revision" INTEGER NOT NULL, "entry_id" TEXT NOT NULL, "entry_version_id" TEXT NOT NULL, "entry_content_hash" TEXT NOT NULL, "searchable_text" TEXT NOT NULL, UNIQUE ("memory_artifact_id", "entry_id"), FOREIGN KEY ("memory_artifact_id", "entry_id", "entry_version_id") REFERENCES "memory_entry_versions" ("memory_artifact_id", "entry_id", "entry_version_id"));
INSERT INTO memory_entry_heads VALUES(1,'mem_art_01m9833xkj55cty32kn9vjbw3r',1,'mem_ent_01m9833xkj336t40rzfcv8cter','mem_ver_01m9833xkjbnzgkegw8ddvz43v','ad9f45dd4c235c5809ebf940a0b9ad9f86bd2a4274ba09f2fa911d0af1ed84c8','use uv not pip');

-- Table  memory_entry_search_fts
DELETE FROM sqlite_schema WHERE name='memory_entry_search_fts' AND type='table';
INSERT INTO sqlite_schema(type,name,tbl_name,rootpage,sql) VALUES('table','memory_entry_search_fts','memory_entry_search_fts',0,'CREATE VIRTUAL TABLE "memory_entry_search_fts" USING fts5(searchable_text, content='''', contentless_delete=1, tokenize="unicode61 remove_diacritics 0 tokenchars ''_''")');

-- Table  memory_entry_search_fts_config
DROP TABLE IF EXISTS memory_entry_search_fts_config;
CREATE TABLE 'memory_entry_search_fts_config'(k PRIMARY KEY, v) WITHOUT ROWID;
INSERT INTO memory_entry_search_fts_config VALUES('usermerge',2);
INSERT INTO memory_entry_search_fts_config VALUES('version',4);

-- Table  memory_entry_search_fts_data
DROP TABLE IF EXISTS memory_entry_search_fts_data;
CREATE TABLE 'memory_entry_search_fts_data'(id INTEGER PRIMARY KEY, block BLOB);
INSERT INTO memory_entry_search_fts_data VALUES(1,X'0104');
INSERT INTO memory_entry_search_fts_data VALUES(10,X'00000001FF00000101010100010101010101000001');
INSERT INTO memory_entry_search_fts_data VALUES(137438953473,X'0000003D1F306D5F3338386166653734663239636239663663396563323863395F6E6F740102041C037069700102051C037573650102021D017601020304230808');

-- Table  memory_entry_search_fts_docsize
DROP TABLE IF EXISTS memory_entry_search_fts_docsize;
CREATE TABLE 'memory_entry_search_fts_docsize'(id INTEGER PRIMARY KEY, sz BLOB, origin INTEGER);
INSERT INTO memory_entry_search_fts_docsize VALUES(1,X'04',1);

-- Table  memory_entry_search_fts_idx
DROP TABLE IF EXISTS memory_entry_search_fts_idx;
CREATE TABLE 'memory_entry_search_fts_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID;
INSERT INTO memory_entry_search_fts_idx VALUES(1,X'',2);

-- Table  memory_entry_versions
DROP TABLE IF EXISTS memory_entry_versions;
CREATE TABLE "memory_entry_versions" ("memory_artifact_id" TEXT NOT NULL, "entry_id" TEXT NOT NULL, "entry_version_id" TEXT NOT NULL PRIMARY KEY, "version" INTEGER NOT NULL, "previous_version_id" TEXT, "kind" TEXT NOT NULL, "text" TEXT NOT NULL, "source_refs" TEXT NOT NULL, "artifact_refs" TEXT NOT NULL, "entry_content_hash" TEXT NOT NULL, "created_in_revision" INTEGER NOT NULL, UNIQUE ("memory_artifact_id", "entry_id", "version"), UNIQUE ("memory_artifact_id", "entry_id", "entry_version_id"), FOREIGN KEY ("previous_version_id") REFERENCES "memory_entry_versions" ("entry_version_id"), FOREIGN KEY ("memory_artifact_id", "created_in_revision") REFERENCES "artifact_revisions" ("artifact_id", "revision"));
INSERT INTO memory_entry_versions VALUES('mem_art_01m9833xkj55cty32kn9vjbw3r','mem_ent_01m9833xkj336t40rzfcv8cter','mem_ver_01m9833xkjbnzgkegw8ddvz43v',1,NULL,'preference','Use uv, not pip.','[{"content_hash":"e19b45549f3b1a43c64b7653767061264f15d9f3c0d2fe05c17006c07df7901e","source_id":"src_note_1"}]','[]','ad9f45dd4c235c5809ebf940a0b9ad9f86bd2a4274ba09f2fa911d0af1ed84c8',1);
-- Triggers and indices on  memory_entry_versions
CREATE INDEX "idx_memory_entry_versions_entry" ON "memory_entry_versions"("entry_id");
CREATE INDEX "idx_memory_entry_versions_hash" ON "memory_entry_versions"("memory_artifact_id", "entry_content_hash");

-- Table  memory_keys
DROP TABLE IF EXISTS memory_keys;
CREATE TABLE "memory_keys" ("key" TEXT NOT NULL PRIMARY KEY, "artifact_id" TEXT NOT NULL, FOREIGN KEY ("artifact_id") REFERENCES "artifact_heads" ("artifact_id"));

-- Table  pc_artifact_lineage_artifacts
DROP TABLE IF EXISTS pc_artifact_lineage_artifacts;
CREATE TABLE "pc_artifact_lineage_artifacts" ("artifact_id" TEXT NOT NULL, "revision" INTEGER NOT NULL, "based_on_family" TEXT NOT NULL, "based_on_artifact_id" TEXT NOT NULL, "based_on_revision" INTEGER NOT NULL, PRIMARY KEY ("artifact_id", "revision", "based_on_artifact_id", "based_on_revision"), FOREIGN KEY ("artifact_id", "revision") REFERENCES "artifact_revisions" ("artifact_id", "revision"), FOREIGN KEY ("based_on_artifact_id", "based_on_revision") REFERENCES "artifact_revisions" ("artifact_id", "revision"));

-- Table  pc_artifact_lineage_sources
DROP TABLE IF EXISTS pc_artifact_lineage_sources;
CREATE TABLE "pc_artifact_lineage_sources" ("artifact_id" TEXT NOT NULL, "revision" INTEGER NOT NULL, "source_id" TEXT NOT NULL, "source_content_hash" TEXT NOT NULL, PRIMARY KEY ("artifact_id", "revision", "source_id"), FOREIGN KEY ("artifact_id", "revision") REFERENCES "artifact_revisions" ("artifact_id", "revision"), FOREIGN KEY ("source_id") REFERENCES "sources" ("source_id"));
INSERT INTO pc_artifact_lineage_sources VALUES('topic_art_01m9833xpb6xrvv5g5g51nr8ev',1,'src_file_1','28a26030291fdc8a21c7048b0c7317ff56242196a27f68ea666531e7ef06e5c5');

-- Table  pc_artifact_processing_auto_wave_targets
DROP TABLE IF EXISTS pc_artifact_processing_auto_wave_targets;
CREATE TABLE "pc_artifact_processing_auto_wave_targets" ("wave_id" TEXT NOT NULL, "binding_name" TEXT NOT NULL, "scope_id" BLOB NOT NULL, "source_through" INTEGER NOT NULL, "completed" INTEGER NOT NULL DEFAULT FALSE, PRIMARY KEY ("wave_id", "binding_name", "scope_id"));

-- Table  pc_artifact_processing_binding_states
DROP TABLE IF EXISTS pc_artifact_processing_binding_states;
CREATE TABLE "pc_artifact_processing_binding_states" ("binding_name" TEXT NOT NULL PRIMARY KEY, "last_auto_wave_completed_at" TIMESTAMP(6) NULL);

-- Table  pc_artifact_processing_leases
DROP TABLE IF EXISTS pc_artifact_processing_leases;
CREATE TABLE "pc_artifact_processing_leases" ("supervisor_group" TEXT NOT NULL PRIMARY KEY, "holder_id" TEXT NOT NULL, "supervisor_generation" INTEGER NOT NULL, "lease_expires_at" TIMESTAMP(6) NULL);

-- Table  pc_artifact_processing_pending
DROP TABLE IF EXISTS pc_artifact_processing_pending;
CREATE TABLE "pc_artifact_processing_pending" ("binding_name" TEXT NOT NULL, "scope_id" BLOB NOT NULL, "source_through" INTEGER NOT NULL, "flush_generation" INTEGER NOT NULL DEFAULT 0, "handled_flush_generation" INTEGER NOT NULL DEFAULT 0, PRIMARY KEY ("binding_name", "scope_id"), CHECK ("source_through" >= 1), CHECK ("flush_generation" >= 0), CHECK ("handled_flush_generation" >= 0), CHECK ("handled_flush_generation" <= "flush_generation"));
INSERT INTO pc_artifact_processing_pending VALUES('topic-memory-source-window','repo:/old/blocked',1,0,0);

-- Table  pc_source_cursors
DROP TABLE IF EXISTS pc_source_cursors;
CREATE TABLE "pc_source_cursors" ("binding_name" TEXT NOT NULL, "scope_id" BLOB NOT NULL, "source_position" INTEGER NOT NULL, PRIMARY KEY ("binding_name", "scope_id"));
INSERT INTO pc_source_cursors VALUES('topic-memory-source-window','repo:/old/project',4);

-- Table  pc_source_scope_journal
DROP TABLE IF EXISTS pc_source_scope_journal;
CREATE TABLE "pc_source_scope_journal" ("scope_id" BLOB NOT NULL, "position" INTEGER NOT NULL, "source_id" TEXT NOT NULL, "lineage_only" INTEGER NOT NULL DEFAULT FALSE, PRIMARY KEY ("scope_id", "position"), UNIQUE ("source_id"), FOREIGN KEY ("source_id") REFERENCES "sources" ("source_id"));
INSERT INTO pc_source_scope_journal VALUES('repo:/old/project',1,'src_turn_1',0);
INSERT INTO pc_source_scope_journal VALUES('repo:/old/project',2,'src_turn_2',0);
INSERT INTO pc_source_scope_journal VALUES('repo:/old/project',3,'src_turn_3',0);
INSERT INTO pc_source_scope_journal VALUES('repo:/old/project',4,'src_file_1',0);
INSERT INTO pc_source_scope_journal VALUES('repo:/old/blocked',1,'src_big',0);

-- Table  pc_source_scope_recorded
DROP TABLE IF EXISTS pc_source_scope_recorded;
CREATE TABLE "pc_source_scope_recorded" ("scope_id" BLOB NOT NULL, "position" INTEGER NOT NULL, "recorded_at" TEXT NOT NULL, PRIMARY KEY ("scope_id", "position"));
INSERT INTO pc_source_scope_recorded VALUES('repo:/old/project',1,'2026-12-07T11:09:41.430000Z');
INSERT INTO pc_source_scope_recorded VALUES('repo:/old/project',2,'2026-12-07T11:09:41.430000Z');
INSERT INTO pc_source_scope_recorded VALUES('repo:/old/project',3,'2026-12-07T11:09:41.430000Z');
INSERT INTO pc_source_scope_recorded VALUES('repo:/old/project',4,'2026-12-07T11:09:41.430000Z');
INSERT INTO pc_source_scope_recorded VALUES('repo:/old/blocked',1,'2026-12-07T11:09:41.470000Z');

-- Table  pc_topic_memory_active_chunks
DROP TABLE IF EXISTS pc_topic_memory_active_chunks;
CREATE TABLE "pc_topic_memory_active_chunks" ("chunk_rowid" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "artifact_id" TEXT NOT NULL, "revision" INTEGER NOT NULL, "ordinal" INTEGER NOT NULL, "scope_id" TEXT NOT NULL, "start_offset" INTEGER NOT NULL, "end_offset" INTEGER NOT NULL, "snippet_text" TEXT NOT NULL, "fts_text" TEXT NOT NULL, "embedding_fingerprint" TEXT, UNIQUE ("artifact_id", "ordinal"), FOREIGN KEY ("artifact_id") REFERENCES "pc_topic_memory_active_topics" ("artifact_id"), FOREIGN KEY ("artifact_id", "revision") REFERENCES "artifact_revisions" ("artifact_id", "revision"));
INSERT INTO pc_topic_memory_active_chunks VALUES(1,'topic_art_01m9833xpb6xrvv5g5g51nr8ev',1,0,'repo:/old/project',0,46,'Tag main, then make release uploads the wheel.','tag main make releas upload wheel',NULL);

-- Table  pc_topic_memory_active_topics
DROP TABLE IF EXISTS pc_topic_memory_active_topics;
CREATE TABLE "pc_topic_memory_active_topics" ("topic_rowid" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "artifact_id" TEXT NOT NULL, "revision" INTEGER NOT NULL, "scope_id" TEXT NOT NULL, "title" TEXT NOT NULL, "summary" TEXT NOT NULL, "fts_text" TEXT NOT NULL, "source_count" INTEGER NOT NULL, "embedding_fingerprint" TEXT, UNIQUE ("artifact_id"), FOREIGN KEY ("artifact_id", "revision") REFERENCES "artifact_revisions" ("artifact_id", "revision"));
INSERT INTO pc_topic_memory_active_topics VALUES(1,'topic_art_01m9833xpb6xrvv5g5g51nr8ev',1,'repo:/old/project','Release process','How releases are cut.','releas process releas cut',1,NULL);
-- Triggers and indices on  pc_topic_memory_active_topics
CREATE INDEX "idx_pc_topic_memory_active_topics_scope" ON "pc_topic_memory_active_topics"("scope_id", "artifact_id");

-- Table  pc_topic_memory_chunk_fts
DELETE FROM sqlite_schema WHERE name='pc_topic_memory_chunk_fts' AND type='table';
INSERT INTO sqlite_schema(type,name,tbl_name,rootpage,sql) VALUES('table','pc_topic_memory_chunk_fts','pc_topic_memory_chunk_fts',0,'CREATE VIRTUAL TABLE "pc_topic_memory_chunk_fts" USING fts5(searchable_text, content='''', contentless_delete=1, tokenize="unicode61 remove_diacritics 0 tokenchars ''_''")');

-- Table  pc_topic_memory_chunk_fts_config
DROP TABLE IF EXISTS pc_topic_memory_chunk_fts_config;
CREATE TABLE 'pc_topic_memory_chunk_fts_config'(k PRIMARY KEY, v) WITHOUT ROWID;
INSERT INTO pc_topic_memory_chunk_fts_config VALUES('version',4);

-- Table  pc_topic_memory_chunk_fts_data
DROP TABLE IF EXISTS pc_topic_memory_chunk_fts_data;
CREATE TABLE 'pc_topic_memory_chunk_fts_data'(id INTEGER PRIMARY KEY, block BLOB);
INSERT INTO pc_topic_memory_chunk_fts_data VALUES(1,X'0106');
INSERT INTO pc_topic_memory_chunk_fts_data VALUES(10,X'00000000FF00000101010100010101010101000001');
INSERT INTO pc_topic_memory_chunk_fts_data VALUES(137438953473,X'000000572030735F3935383162663564613965363335633763326463646334665F6D61696E0102031E026B650102041C0672656C6561730102051C037461670102021C0675706C6F61640102061C05776865656C0102070424070B080B');

-- Table  pc_topic_memory_chunk_fts_docsize
DROP TABLE IF EXISTS pc_topic_memory_chunk_fts_docsize;
CREATE TABLE 'pc_topic_memory_chunk_fts_docsize'(id INTEGER PRIMARY KEY, sz BLOB, origin INTEGER);
INSERT INTO pc_topic_memory_chunk_fts_docsize VALUES(1,X'06',1);

-- Table  pc_topic_memory_chunk_fts_idx
DROP TABLE IF EXISTS pc_topic_memory_chunk_fts_idx;
CREATE TABLE 'pc_topic_memory_chunk_fts_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID;
INSERT INTO pc_topic_memory_chunk_fts_idx VALUES(1,X'',2);

-- Table  pc_topic_memory_retrieval_shape
DROP TABLE IF EXISTS pc_topic_memory_retrieval_shape;
CREATE TABLE "pc_topic_memory_retrieval_shape" ("shape_key" TEXT NOT NULL PRIMARY KEY, "kind" TEXT NOT NULL, "chunk_policy" TEXT NOT NULL, "analyzer_version" TEXT NOT NULL, "embedding_profile" TEXT, "profile_fingerprint" TEXT);
INSERT INTO pc_topic_memory_retrieval_shape VALUES('deployment','fts','topic-chunks-v1','v1-porter',NULL,NULL);

-- Table  pc_topic_memory_revision_publications
DROP TABLE IF EXISTS pc_topic_memory_revision_publications;
CREATE TABLE "pc_topic_memory_revision_publications" ("artifact_id" TEXT NOT NULL, "revision" INTEGER NOT NULL, "scope_id" TEXT NOT NULL, "published_at" TEXT NOT NULL, PRIMARY KEY ("artifact_id", "revision"), FOREIGN KEY ("artifact_id", "revision") REFERENCES "artifact_revisions" ("artifact_id", "revision"));
INSERT INTO pc_topic_memory_revision_publications VALUES('topic_art_01m9833xpb6xrvv5g5g51nr8ev',1,'repo:/old/project','2026-12-07T11:09:41.456000Z');

-- Table  pc_topic_memory_topic_fts
DELETE FROM sqlite_schema WHERE name='pc_topic_memory_topic_fts' AND type='table';
INSERT INTO sqlite_schema(type,name,tbl_name,rootpage,sql) VALUES('table','pc_topic_memory_topic_fts','pc_topic_memory_topic_fts',0,'CREATE VIRTUAL TABLE "pc_topic_memory_topic_fts" USING fts5(searchable_text, content='''', contentless_delete=1, tokenize="unicode61 remove_diacritics 0 tokenchars ''_''")');

-- Table  pc_topic_memory_topic_fts_config
DROP TABLE IF EXISTS pc_topic_memory_topic_fts_config;
CREATE TABLE 'pc_topic_memory_topic_fts_config'(k PRIMARY KEY, v) WITHOUT ROWID;
INSERT INTO pc_topic_memory_topic_fts_config VALUES('version',4);

-- Table  pc_topic_memory_topic_fts_data
DROP TABLE IF EXISTS pc_topic_memory_topic_fts_data;
CREATE TABLE 'pc_topic_memory_topic_fts_data'(id INTEGER PRIMARY KEY, block BLOB);
INSERT INTO pc_topic_memory_topic_fts_data VALUES(1,X'0104');
INSERT INTO pc_topic_memory_topic_fts_data VALUES(10,X'00000000FF00000101010100010101010101000001');
INSERT INTO pc_topic_memory_topic_fts_data VALUES(137438953473,X'0000003F1F30735F3935383162663564613965363335633763326463646334665F6375740102051C0770726F636573730102031C0672656C6561730104020404230C');

-- Table  pc_topic_memory_topic_fts_docsize
DROP TABLE IF EXISTS pc_topic_memory_topic_fts_docsize;
CREATE TABLE 'pc_topic_memory_topic_fts_docsize'(id INTEGER PRIMARY KEY, sz BLOB, origin INTEGER);
INSERT INTO pc_topic_memory_topic_fts_docsize VALUES(1,X'04',1);

-- Table  pc_topic_memory_topic_fts_idx
DROP TABLE IF EXISTS pc_topic_memory_topic_fts_idx;
CREATE TABLE 'pc_topic_memory_topic_fts_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID;
INSERT INTO pc_topic_memory_topic_fts_idx VALUES(1,X'',2);

-- Table  pc_topic_memory_work_budgets
DROP TABLE IF EXISTS pc_topic_memory_work_budgets;
CREATE TABLE "pc_topic_memory_work_budgets" ("scope_id" BLOB NOT NULL, "binding_name" TEXT NOT NULL, "source_after" INTEGER NOT NULL, "furthest_through" INTEGER NOT NULL, "attempt_id" TEXT NOT NULL, "attempt_count" INTEGER NOT NULL, "reserved_requests" INTEGER NOT NULL, "reserved_tokens" INTEGER NOT NULL, "failure_code" TEXT, PRIMARY KEY ("scope_id", "binding_name", "source_after"));
INSERT INTO pc_topic_memory_work_budgets VALUES('repo:/old/blocked','topic-memory-source-window',0,0,'628e772e-d92c-404c-8799-41a5ba4d4e8d',1,0,0,'source_complexity_limit');

-- Table  powercontext_meta
DROP TABLE IF EXISTS powercontext_meta;
CREATE TABLE "powercontext_meta" ("key" TEXT NOT NULL PRIMARY KEY, "value" TEXT);
INSERT INTO powercontext_meta VALUES('schema_version','1');
INSERT INTO powercontext_meta VALUES('analyzer_version','v1-porter');
INSERT INTO powercontext_meta VALUES('hash_format','spec-v1');

-- Table  sources
DROP TABLE IF EXISTS sources;
CREATE TABLE "sources" ("journal_position" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "source_id" TEXT NOT NULL, "kind" TEXT NOT NULL, "content" TEXT NOT NULL, "content_hash" TEXT NOT NULL, "uri" TEXT, "metadata" TEXT NOT NULL, UNIQUE ("source_id"));
INSERT INTO sources VALUES(1,'src_note_1','user_note','Use uv, not pip.','e19b45549f3b1a43c64b7653767061264f15d9f3c0d2fe05c17006c07df7901e',NULL,'[]');
INSERT INTO sources VALUES(2,'src_turn_1','conversation','User:
ship it','b677ae1fc2d56acd6d65455579691baf47659022ad45c5082b2426ad5246a107','claude-code://session/s1/turn/t1','[]');
INSERT INTO sources VALUES(3,'src_turn_2','conversation','Assistant:
deploying','fa0df2f9ad5ceb296775ef8a01ac5ce3006ea2a5f40473166165c539d94dfd3b','claude-code://session/s1/turn/t2','[]');
INSERT INTO sources VALUES(4,'src_turn_3','conversation','User:
thanks','6113f390f6033bf0d565220dca0c3e0c89cd4070070cee76f11de69cefd56f45','claude-code://session/s1/turn/t3','[]');
INSERT INTO sources VALUES(5,'src_file_1','file','# Release
Tag main, then make release.','28a26030291fdc8a21c7048b0c7317ff56242196a27f68ea666531e7ef06e5c5','file:///old/project/RELEASE.md','[]');
INSERT INTO sources VALUES(6,'src_big','note','big','7453fc04e2db645a1b87c83f37cbb060855e22ea054fca7ee83c06681b613b4a','file:///old/big.txt','[]');

-- For primary key autoincrements the next id to use is stored in
-- sqlite_sequence
DELETE FROM main.sqlite_sequence WHERE name='memory_entry_heads';
INSERT INTO main.sqlite_sequence VALUES ('memory_entry_heads', 1);
DELETE FROM main.sqlite_sequence WHERE name='pc_topic_memory_active_chunks';
INSERT INTO main.sqlite_sequence VALUES ('pc_topic_memory_active_chunks', 1);
DELETE FROM main.sqlite_sequence WHERE name='pc_topic_memory_active_topics';
INSERT INTO main.sqlite_sequence VALUES ('pc_topic_memory_active_topics', 1);
DELETE FROM main.sqlite_sequence WHERE name='sources';
INSERT INTO main.sqlite_sequence VALUES ('sources', 6);

COMMIT TRANSACTION;

-- Restoring foreign key checking back on.  Note that SQLite 3.6.19 is off by
-- default
PRAGMA foreign_keys=ON;

-- Restoring writable schema back to default
PRAGMA writable_schema=OFF;

-- We need to force SQLite to reread the schema because otherwise it doesn't
-- know that the virtual tables we inserted directly into sqlite_schema exist.
BEGIN;
CREATE TABLE no_such_table(x,y,z);
ROLLBACK;
