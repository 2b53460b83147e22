//! A seeded "poor man's fuzz": random and mutated inputs for every reader and the serializer
//! (10,000 each for the in-memory readers, a few hundred for those read through files), none may
//! panic. The same bodies run under cargo-fuzz from the workspace's `fuzz/` folder.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::fuzzing::{
    fuzz_csv, fuzz_python_literal, fuzz_semtab, fuzz_serialize, fuzz_sotab_json, fuzz_t2d,
    fuzz_turl_json, fuzz_wikitables_csv,
};

const CASES: usize = 10_000;

/// Bytes that matter to the parsers, inserted more often than chance would.
const INTERESTING: &[u8] = b"\",;\t|\n\r{}[]:'\\0123456789-.eE\xEF\xBB\xBF\xFF\xC3";

fn mutate(rng: &mut ChaCha8Rng, seed: &[u8]) -> Vec<u8> {
    let mut data = seed.to_vec();
    for _ in 0..rng.random_range(1..8) {
        let at = if data.is_empty() {
            0
        } else {
            rng.random_range(0..=data.len())
        };
        match rng.random_range(0..5) {
            0 if at < data.len() => data[at] = rng.random(),
            1 => data.insert(at, INTERESTING[rng.random_range(0..INTERESTING.len())]),
            2 if at < data.len() => {
                let end = (at + rng.random_range(1..16)).min(data.len());
                data.drain(at..end);
            }
            3 => {
                let copy: Vec<u8> = data[at..].iter().take(32).copied().collect();
                data.splice(at..at, copy);
            }
            _ => data.truncate(at),
        }
    }
    data
}

fn random_bytes(rng: &mut ChaCha8Rng) -> Vec<u8> {
    let len = rng.random_range(0..256);
    (0..len)
        .map(|_| {
            if rng.random_bool(0.5) {
                INTERESTING[rng.random_range(0..INTERESTING.len())]
            } else {
                rng.random()
            }
        })
        .collect()
}

fn run(seeds: &[&[u8]], target: fn(&[u8]), seed: u64) {
    run_cases(seeds, target, seed, CASES);
}

fn run_cases(seeds: &[&[u8]], target: fn(&[u8]), seed: u64, cases: usize) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // The seeds themselves first.
    for seed in seeds {
        target(seed);
    }
    for case in 0..cases {
        let data = if case % 4 == 0 {
            random_bytes(&mut rng)
        } else {
            let base = seeds[rng.random_range(0..seeds.len())];
            mutate(&mut rng, base)
        };
        target(&data);
    }
}

#[test]
fn csv_reader_never_panics() {
    let seeds: &[&[u8]] = &[
        b"a,b,c\n1,2,3\n4,5,6\n",
        b"\xEF\xBB\xBFname;city\r\n\"Ann \"\"A\"\"\";Oslo\r\nBob;\"Ber\ngen\"\r\n",
        b"x\ty\n1\t\n\t2\n",
        b"\"unclosed,1\n2,3\n",
    ];
    run(seeds, fuzz_csv, 1);
}

#[test]
fn sotab_reader_never_panics() {
    let seeds: &[&[u8]] = &[
        b"{\"0\":\"Desejo\",\"1\":\"978-972\",\"2\":336,\"3\":\"2013-06-12\"}\n{\"0\":null,\"1\":[\"$9.75\"],\"2\":16.0}\n",
        b"{\"0\":{\"a\":[1,2,{\"b\":null}]},\"5\":true}\n",
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xab\x56\x32\x50\xb2\x52\x4a\x54\xaa\xe5\x02\x00",
    ];
    run(seeds, fuzz_sotab_json, 2);
}

#[test]
fn python_literal_parser_never_panics() {
    let seeds: &[&[u8]] = &[
        b"[[[[0, 0], [524139, 'Bottle Rocket']], [[10, 0], [26121980, \"Today's Special\"]]]]",
        b"{'film', 'tv'}",
        b"['a\\x41\\u00e9', (-1.5e3, None, True)]",
    ];
    run(seeds, fuzz_python_literal, 3);
}

/// Inputs read through scratch files cost a few file operations each: fewer cases.
const FILE_CASES: usize = 400;

#[test]
fn semtab_loader_never_panics() {
    // Parts: tables/t0.csv, tables/t1.csv, CTA targets, CTA ground truth, CPA targets, CPA
    // ground truth.
    let seeds: &[&[u8]] = &[
        b"col0,col1\nBerlin,Germany\nParis,France\n\0name,born\nAda,1815\n\0t0,0\nt1,1\n\0\
          t0,0,\"http://a/City, http://a/Place\"\nt1,1,http://a/Year\n\0t0,0,1\n\0\
          t0,0,1,http://a/country\n",
        b"a,b\n1,2\n\0\0\0t0,5,x\n",
        b"a\n\0b\n\0\0\0\0t1,0,0,p q\n",
    ];
    run_cases(seeds, fuzz_semtab, 4, FILE_CASES);
}

#[test]
fn t2d_loader_never_panics() {
    // Parts: classes_complete.csv, attributes/t0.csv, tables/t0.csv, attributes/t1.csv,
    // tables/t1.csv.
    let seeds: &[&[u8]] = &[
        b"\"t0.tar.gz\",\"Film\",\"http://dbpedia.org/ontology/Film\",\"0\"\n\0\
          \"http://www.w3.org/2000/01/rdf-schema#label\",\"title\",\"True\",\"0\"\n\
          \"http://dbpedia.org/ontology/year\",\"year\",\"False\",\"1\"\n\0\
          \"title\",\"year\"\n\"Alien\",\"1979\"\n\"Heat\",\"1995\"\n",
        // A vertical table: attribute names run down the first column.
        b"\0\0\0\"p\",\"Owner:\",\"True\",\"2\"\n\"q\",\"Title:\",\"False\",\"0\"\n\0\
          \"Title:\",\"Shop\"\n\"URL:\",\"http://x\"\n\"Owner:\",\"Ann\"\n",
        b"\0\"p\",\"h\",\"False\",\"9\"\n\0\"h\"\n\"1\"\n",
    ];
    run_cases(seeds, fuzz_t2d, 5, FILE_CASES);
}

#[test]
fn turl_json_reader_never_panics() {
    let seeds: &[&[u8]] = &[
        br#"[["t-1","Page",12,"Section","Cap",["name","year"],[[[[0,0],[5,"Alien"]],[[1,0],[6,"Heat"]]],[[[0,1],[7,"1979"]]]],[["film.film"],["time.year"]]]]"#,
        br#"[["t-2","P",1,"S","",["a","b","c"],[[],[[[2,1],[1,"x"]]],[]],[["r1"],["r2","r3"]]]]"#,
        br#"[[7,null,0,null,null,[],[],[]]]"#,
    ];
    run_cases(seeds, fuzz_turl_json, 6, FILE_CASES);
}

#[test]
fn wikitables_csv_reader_never_panics() {
    let seeds: &[&[u8]] = &[
        b"table_name,table,labels,domain,domains,page_title,section_title,headers\n\
          t1,\"[[[[0, 0], [524139, 'Bottle Rocket']], [[1, 0], [26121980, \"\"Today's Special\"\"]]]]\",\
          \"[['film.film']]\",film,\"['film']\",Films,Cast,\"['title']\"\n",
        b"table_name,table,labels,page_title,section_title,headers\nx,[],[],p,s,[]\n",
        b"headers,labels,table,table_name,section_title,page_title\n\"['a', 'b']\",\"[[], ['l']]\",\"[[], [[[3, 1], [0, 'z']]]]\",t,s,p\n",
    ];
    run_cases(seeds, fuzz_wikitables_csv, 7, FILE_CASES);
}

#[cfg(feature = "parquet")]
#[test]
fn gittables_parquet_reader_never_panics() {
    let seeds = crate::fuzzing::gittables_parquet_seeds();
    assert!(!seeds.is_empty());
    let seeds: Vec<&[u8]> = seeds.iter().map(Vec::as_slice).collect();
    run_cases(
        &seeds,
        crate::fuzzing::fuzz_gittables_parquet,
        8,
        FILE_CASES,
    );
}

#[test]
fn serializer_keeps_its_invariants() {
    // 14 config bytes (flags, budget lo/hi, rows, cell bytes, min cell bytes, header bytes,
    // context bytes, query cells, query cell bytes, query header bytes, seed lo/hi, spare), then
    // the table: columns split by U+0001, cells by U+0000.
    let seeds: &[&[u8]] = &[
        b"\0\0\x01\x08\x30\x08\x20\x40\x02\x10\x20\0\0\0\x04People\0Sec\0Cap\x01name\0Ann\0Bob\0\x02\x01born\x001815\0\0x",
        b"\x03\x0a\0\x04\x04\x01\x04\x04\x01\x04\x04\x07\0\0\x03a\0b\0c\x01\x03d",
        b"\0\x40\0\x20\x30\x08\x20\x40\x02\x10\x20\0\0\0h0\0h\xc3\xa9llo w\xc3\xb6rld\x01h1\0v\x01h2\0v\x01h3\0v\x01h4\0v\x01h5\0v\x01h6\0v\x01h7\0v\x01h8\0v\x01h9\0v\x01h10\0v\x01h11\0v",
    ];
    run(seeds, fuzz_serialize, 9);
}
