//! Field-weighted BM25 (BM25F) over modes.
//!
//! Each mode is a document with several fields. A term's frequency is first
//! length-normalized *per field* and weighted by the field, then saturated
//! once (Robertson and Zaragoza's BM25F), so a word in the name counts for
//! more than the same word deep in a long description, and a mode cannot win
//! by repeating one word in every field.
//!
//! Everything that depends only on the catalog (IDF and each posting's
//! saturated frequency) is computed at build time; terms are ids of the
//! index's shared [`Vocabulary`](crate::select::text::analyze::Vocabulary),
//! so a query costs a multiply-add per posting.

/// Term-frequency saturation: how fast repeated occurrences stop adding.
pub const K1: f32 = 1.2;

/// The fields of a mode document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Name,
    Title,
    Summary,
    Keywords,
    Description,
    Parameters,
}

impl Field {
    pub const ALL: [Field; 6] = [
        Field::Name,
        Field::Title,
        Field::Summary,
        Field::Keywords,
        Field::Description,
        Field::Parameters,
    ];

    fn slot(self) -> usize {
        self as usize
    }
}

/// How one field counts: `weight` scales its term frequency; `b` is how much
/// a long field is discounted (0 = not at all, 1 = fully by length).
#[derive(Debug, Clone, Copy)]
pub struct FieldParams {
    pub weight: f32,
    pub b: f32,
}

/// Field parameters by [`Field`] order.
pub type FieldTable = [FieldParams; 6];

/// A mode's text per field: every term occurrence (ids, repeated as often as
/// the term occurs) and the field's length in words.
#[derive(Debug, Default, Clone)]
pub struct Document {
    pub fields: [FieldTerms; 6],
}

#[derive(Debug, Default, Clone)]
pub struct FieldTerms {
    pub occurrences: Vec<u32>,
    pub length: f32,
}

impl Document {
    pub fn field_mut(&mut self, field: Field) -> &mut FieldTerms {
        &mut self.fields[field.slot()]
    }
}

#[derive(Debug)]
pub struct Bm25F {
    /// By term id; 0 for terms no document has.
    idf: Vec<f32>,
    /// By term id: (document, saturated weighted frequency in 0..1), by document.
    postings: Vec<Vec<(u32, f32)>>,
}

impl Bm25F {
    /// `terms` is the vocabulary size (term ids are below it).
    pub fn build(documents: &[Document], params: &FieldTable, terms: usize) -> Self {
        let n = documents.len().max(1) as f32;
        let mut average_length = [0.0f32; 6];
        for document in documents {
            for (slot, field) in document.fields.iter().enumerate() {
                average_length[slot] += field.length / n;
            }
        }

        let mut postings: Vec<Vec<(u32, f32)>> = vec![Vec::new(); terms];
        // Dense per-term accumulator for one document, and the terms it touched.
        let mut weighted = vec![0.0f32; terms];
        let mut touched: Vec<u32> = Vec::new();
        for (doc, document) in documents.iter().enumerate() {
            // Weighted, length-normalized frequency per term, summed over
            // fields in field order (so every sum is the same on every run).
            for (slot, field) in document.fields.iter().enumerate() {
                let FieldParams { weight, b } = params[slot];
                if weight <= 0.0 || field.occurrences.is_empty() {
                    continue;
                }
                let relative = if average_length[slot] > 0.0 {
                    field.length / average_length[slot]
                } else {
                    1.0
                };
                let per_occurrence = weight / (1.0 - b + b * relative).max(f32::EPSILON);
                for &id in &field.occurrences {
                    let Some(slot) = weighted.get_mut(id as usize) else {
                        continue;
                    };
                    if *slot == 0.0 {
                        touched.push(id);
                    }
                    *slot += per_occurrence;
                }
            }
            // Postings stay sorted by document: documents come in order.
            for &id in &touched {
                let frequency = std::mem::take(&mut weighted[id as usize]);
                postings[id as usize].push((doc as u32, frequency / (K1 + frequency)));
            }
            touched.clear();
        }
        let idf = postings
            .iter()
            .map(|list| {
                if list.is_empty() {
                    return 0.0;
                }
                let df = list.len() as f32;
                ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
            })
            .collect();
        Bm25F { idf, postings }
    }

    /// The IDF of a term, or `None` if no document has it.
    pub fn idf(&self, id: u32) -> Option<f32> {
        let list = self.postings.get(id as usize)?;
        (!list.is_empty()).then(|| self.idf[id as usize])
    }

    /// Adds `weight × idf × saturation` of the term to each matching
    /// document's score; returns the term's largest possible contribution
    /// (`weight × idf`), 0 if no document has the term.
    pub fn accumulate(&self, id: u32, weight: f32, scores: &mut [f32]) -> f32 {
        let Some(list) = self.postings.get(id as usize) else {
            return 0.0;
        };
        let scale = weight * self.idf[id as usize];
        for &(doc, saturation) in list {
            if let Some(score) = scores.get_mut(doc as usize) {
                *score += scale * saturation;
            }
        }
        scale
    }

    /// What the term adds to one document's score (for explaining a match).
    pub fn contribution(&self, id: u32, weight: f32, doc: usize) -> f32 {
        let Some(list) = self.postings.get(id as usize) else {
            return 0.0;
        };
        match list.binary_search_by_key(&(doc as u32), |&(d, _)| d) {
            Ok(position) => weight * self.idf[id as usize] * list[position].1,
            Err(_) => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Term ids used by the tests.
    const DEBUG: u32 = 0;
    const OTHER: u32 = 1;
    const COMMON: u32 = 2;
    const RARE: u32 = 3;
    const ABSENT: u32 = 4;
    const TERMS: usize = 5;

    fn document(fields: &[(Field, &[u32])]) -> Document {
        let mut document = Document::default();
        for (field, ids) in fields {
            let terms = document.field_mut(*field);
            for id in *ids {
                terms.occurrences.push(*id);
                terms.length += 1.0;
            }
        }
        document
    }

    const EVEN: FieldTable = [FieldParams {
        weight: 1.0,
        b: 0.75,
    }; 6];

    #[test]
    fn a_weightier_field_wins() {
        let docs = [
            document(&[(Field::Name, &[DEBUG]), (Field::Description, &[OTHER])]),
            document(&[(Field::Name, &[OTHER]), (Field::Description, &[DEBUG])]),
        ];
        let mut params = EVEN;
        params[Field::Name.slot()].weight = 3.0;
        let index = Bm25F::build(&docs, &params, TERMS);
        let mut scores = [0.0; 2];
        index.accumulate(DEBUG, 1.0, &mut scores);
        assert!(scores[0] > scores[1], "{scores:?}");
        assert!(index.contribution(DEBUG, 1.0, 0) > 0.0);
        assert_eq!(index.contribution(DEBUG, 1.0, 5), 0.0);
    }

    #[test]
    fn rarer_terms_weigh_more_and_unknown_terms_nothing() {
        let docs = [
            document(&[(Field::Description, &[COMMON, RARE])]),
            document(&[(Field::Description, &[COMMON])]),
            document(&[(Field::Description, &[COMMON])]),
        ];
        let index = Bm25F::build(&docs, &EVEN, TERMS);
        assert!(index.idf(RARE).unwrap() > index.idf(COMMON).unwrap());
        assert_eq!(index.idf(ABSENT), None);
        let mut scores = [0.0; 3];
        assert_eq!(index.accumulate(ABSENT, 1.0, &mut scores), 0.0);
        assert_eq!(index.accumulate(99, 1.0, &mut scores), 0.0);
        assert_eq!(scores, [0.0; 3]);
    }

    #[test]
    fn repetition_saturates() {
        let docs = [
            document(&[(Field::Description, &[RARE; 6])]),
            document(&[(Field::Description, &[RARE, 5, 6, 7, 8, 9])]),
        ];
        let index = Bm25F::build(&docs, &EVEN, 10);
        let mut scores = [0.0; 2];
        let ceiling = index.accumulate(RARE, 1.0, &mut scores);
        assert!(
            scores[0] < ceiling && scores[0] < 2.5 * scores[1],
            "{scores:?}"
        );
    }

    #[test]
    fn empty_catalog_is_fine() {
        let index = Bm25F::build(&[], &EVEN, 0);
        assert_eq!(index.accumulate(0, 1.0, &mut []), 0.0);
    }
}
