//! The benchmarks' text: words drawn from a 5,000-word vocabulary with a skew like text's, the
//! same for a seed in every run and in the reference's scripts (which read the exported corpus).

/// A deterministic generator (64-bit LCG), so every run and the reference see one corpus.
pub struct Words {
    state: u64,
    vocabulary: Vec<String>,
}

impl Words {
    /// The generator from `seed`.
    pub fn new(seed: u64) -> Self {
        let mut words = Self { state: seed, vocabulary: Vec::new() };
        words.vocabulary = (0..5000).map(|i| format!("{}{i}", ["tea", "rust", "cat", "sky", "map"][i % 5])).collect();
        words
    }

    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        self.state >> 33
    }

    /// A word, the frequent ones more often (a skew like text's).
    pub fn word(&mut self) -> &str {
        let r = (self.next() % 1_000_000) as f64 / 1_000_000.0;
        let index = ((r * r * r) * self.vocabulary.len() as f64) as usize;
        &self.vocabulary[index.min(self.vocabulary.len() - 1)]
    }

    /// `words` words, space-separated.
    pub fn sentence(&mut self, words: usize) -> String {
        (0..words).map(|_| self.word().to_owned()).collect::<Vec<_>>().join(" ")
    }
}
